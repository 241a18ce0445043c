"""The other APIs' calls beside Chat Completions' in a run's report: each call's added latency
as a ratio to chat's in the same section, p50 and p99, flagged over 1.2x, in the section's
JSON, the run's list of ratios over the limit, the printed lines, the targets and the table."""

from __future__ import annotations

from typing import Any

from bench import versus_chat
from bench.report import added, table, targets

CHAT = {"latency_c1_p50": 1.0, "latency_c1_p99": 4.0}
CHAT_STREAM = {
    "stream_c1_first_p50": 2.0, "stream_c1_first_p99": 5.0,
    "stream_c1_last_p50": 2.5, "stream_c1_last_p99": 6.0,
}  # fmt: skip


def section(**measured: float | None) -> dict[str, Any]:
    return {"gateway": "momor-uvicorn", "added": {**CHAT, **CHAT_STREAM, **measured}}


def row_of(rows: list[dict[str, Any]], api: str, call: str, q: str) -> dict[str, Any]:
    (found,) = (r for r in rows if (r["api"], r["call"], r["quantile"]) == (api, call, q))
    return found


def test_each_call_is_a_ratio_to_chats_call_of_its_kind_at_p50_and_p99() -> None:
    rows = versus_chat.ratios(
        section(
            embeddings_c1_p50=0.9,
            embeddings_c1_p99=4.4,
            messages_c1_p50=1.1,
            messages_c1_p99=6.0,
            messages_stream_c1_first_p50=2.2,
            messages_stream_c1_first_p99=5.0,
            messages_stream_c1_last_p50=2.0,
            messages_stream_c1_last_p99=9.0,
            responses_c1_p50=0.8,
            responses_c1_p99=4.0,
            responses_stream_c1_first_p50=2.6,
            responses_stream_c1_first_p99=5.5,
            responses_stream_c1_last_p50=2.5,
            responses_stream_c1_last_p99=7.8,
        )
    )

    assert len(rows) == 14
    assert row_of(rows, "messages", "at c1", "p99") == {
        "api": "messages", "call": "at c1", "quantile": "p99", "added_ms": 6.0,
        "chat_added_ms": 4.0, "ratio": 1.5, "limit": 1.2, "over": True,
    }  # fmt: skip
    assert row_of(rows, "embeddings", "at c1", "p50")["ratio"] == 0.9
    first = row_of(rows, "messages", "to the first chunk, stream c1", "p50")
    assert (first["chat_added_ms"], first["ratio"], first["over"]) == (2.0, 1.1, False)
    last = row_of(rows, "messages", "to the last chunk, stream c1", "p99")
    assert (last["chat_added_ms"], last["ratio"], last["over"]) == (6.0, 1.5, True)
    responses = row_of(rows, "responses", "at c1", "p50")
    assert (responses["chat_added_ms"], responses["ratio"], responses["over"]) == (1.0, 0.8, False)
    first = row_of(rows, "responses", "to the first chunk, stream c1", "p50")
    assert (first["chat_added_ms"], first["ratio"], first["over"]) == (2.0, 1.3, True)
    last = row_of(rows, "responses", "to the last chunk, stream c1", "p99")
    assert (last["chat_added_ms"], last["ratio"], last["over"]) == (6.0, 1.3, True)


def test_a_ratio_of_exactly_the_limit_is_within_it() -> None:
    rows = versus_chat.ratios(section(messages_c1_p50=1.2, messages_c1_p99=4.84))

    assert row_of(rows, "messages", "at c1", "p50")["over"] is False
    assert row_of(rows, "messages", "at c1", "p99")["over"] is True  # 1.21x


def test_no_ratio_is_taken_to_a_chat_call_that_added_nothing() -> None:
    measured = section(messages_c1_p50=0.4, messages_c1_p99=0.5)
    measured["added"] |= {"latency_c1_p50": 0.0, "latency_c1_p99": None}

    rows = versus_chat.ratios(measured)

    for q in ("p50", "p99"):
        row = row_of(rows, "messages", "at c1", q)
        assert (row["ratio"], row["over"]) == (None, None)


def test_a_call_the_section_did_not_measure_has_no_ratio() -> None:
    rows = versus_chat.ratios(section(embeddings_c1_p50=0.5, embeddings_c1_p99=2.0))

    assert versus_chat.measured(section(embeddings_c1_p50=0.5)) is True
    assert versus_chat.measured(section()) is False
    missing = row_of(rows, "messages", "at c1", "p50")
    assert (missing["added_ms"], missing["ratio"], missing["over"]) == (None, None, None)


def test_the_run_lists_every_ratio_over_the_limit_with_its_gateway() -> None:
    slow = section(messages_c1_p50=1.3, messages_c1_p99=4.0)
    slow["versus_chat"] = versus_chat.ratios(slow)
    fine = {**section(messages_c1_p50=1.0), "gateway": "momor-plain-uvicorn"}
    fine["versus_chat"] = versus_chat.ratios(fine)

    over = versus_chat.over([slow, fine, {"gateway": "floor"}])

    assert [(r["gateway"], r["api"], r["call"], r["quantile"], r["ratio"]) for r in over] == [
        ("momor-uvicorn", "messages", "at c1", "p50", 1.3)
    ]


def test_the_printed_lines_flag_a_ratio_over_the_limit_and_skip_what_was_not_measured() -> None:
    measured = section(messages_c1_p50=1.3, messages_c1_p99=4.0)
    measured["versus_chat"] = versus_chat.ratios(measured)

    assert versus_chat.text([measured]).splitlines() == [
        "  momor-uvicorn: messages at c1 p50: 1.3 ms vs 1.0 ms = 1.3x  OVER 1.2x",
        "  momor-uvicorn: messages at c1 p99: 4.0 ms vs 4.0 ms = 1.0x",
    ]


def phase(p50: float, p99: float, **more: float) -> dict[str, Any]:
    return {"p50": p50, "p90": p50, "p99": p99, **more}


def stream(first: float, last: float) -> dict[str, Any]:
    return {"first_p50": first, "first_p99": first, "last_p50": last, "last_p99": last}


def measured_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """A direct and a gateway measurement of every call, as `bench.measure.measure` gives."""
    direct = {
        "latency_c1": phase(0.2, 1.0), "embeddings_c1": phase(0.1, 0.5),
        "messages_c1": phase(0.3, 1.0), "responses_c1": phase(0.25, 1.0),
        "stream_c1": stream(0.5, 0.7), "messages_stream_c1": stream(0.4, 0.5),
        "responses_stream_c1": stream(0.45, 0.6), "throughput": {"rps": 1000.0},
    }  # fmt: skip
    target = {
        "latency_c1": phase(1.2, 5.0, cpu_ms_per_call=0.5),
        "embeddings_c1": phase(1.0, 4.0, cpu_ms_per_call=0.4),
        "messages_c1": phase(1.6, 5.0, cpu_ms_per_call=0.7),
        "responses_c1": phase(1.35, 5.2, cpu_ms_per_call=0.6),
        "stream_c1": stream(1.5, 2.7),
        "messages_stream_c1": {**stream(1.4, 2.5), "cpu_ms_per_stream": 1.1},
        "responses_stream_c1": {**stream(1.65, 2.6), "cpu_ms_per_stream": 1.2},
        "throughput": {"rps": 500.0},
    }
    return direct, target


def test_each_calls_added_latency_is_against_its_own_direct_call() -> None:
    direct, target = measured_pair()

    found = added(direct, target)

    assert (found["embeddings_c1_p50"], found["embeddings_c1_p99"]) == (0.9, 3.5)
    assert (found["messages_c1_p50"], found["messages_c1_p99"]) == (1.3, 4.0)
    assert found["messages_stream_c1_first_p50"] == 1.0
    assert found["messages_stream_c1_last_p99"] == 2.0
    assert (found["responses_c1_p50"], found["responses_c1_p99"]) == (1.1, 4.2)
    assert found["responses_stream_c1_first_p50"] == 1.2
    assert found["responses_stream_c1_last_p99"] == 2.0
    without = {k: v for k, v in target.items() if k != "messages_c1"}
    assert "messages_c1_p50" not in added(direct, without)


def governed(direct: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    return {
        "gateway": "momor-uvicorn", "server": "uvicorn", "deployment": "governed",
        "direct": direct, "target": target, "added": added(direct, target),
    }  # fmt: skip


def test_the_targets_hold_each_calls_ratio_to_chat_against_the_limit() -> None:
    momor = governed(*measured_pair())

    goals = {g["target"]: g for g in targets([momor])}

    plain = goals["messages: added latency p50 at c1 vs Chat Completions' (governed)"]
    assert plain == {
        "target": "messages: added latency p50 at c1 vs Chat Completions' (governed)",
        "value": 1.3, "limit": "<= 1.2 x", "met": False,
        "note": "1.30 ms vs Chat Completions' 1.00 ms",
    }  # fmt: skip
    first = (
        "messages: added latency p50 to the first chunk, stream c1 vs Chat Completions' (governed)"
    )
    assert (goals[first]["value"], goals[first]["met"]) == (1.0, True)
    embeddings = goals["embeddings: added latency p99 at c1 vs Chat Completions' (governed)"]
    assert (embeddings["value"], embeddings["met"]) == (0.88, True)
    responses = goals["responses: added latency p50 at c1 vs Chat Completions' (governed)"]
    assert (responses["value"], responses["met"]) == (1.1, True)
    assert responses["note"] == "1.10 ms vs Chat Completions' 1.00 ms"
    last = (
        "responses: added latency p99 to the last chunk, stream c1 vs Chat Completions' (governed)"
    )
    assert (goals[last]["value"], goals[last]["met"]) == (1.0, True)


def test_a_target_of_a_call_not_measured_says_so() -> None:
    direct, target = measured_pair()
    del target["messages_c1"]

    goals = {g["target"]: g for g in targets([governed(direct, target)])}

    missing = goals["messages: added latency p99 at c1 vs Chat Completions' (governed)"]
    assert (missing["value"], missing["met"]) == (None, None)
    assert missing["note"] == "not measured: the deployment serves no messages call"


def test_the_table_shows_the_messages_and_responses_calls_and_their_gateway_cpu() -> None:
    momor = governed(*measured_pair())

    lines = table({"sections": [momor]}).splitlines()

    by_label = {line.split("  ")[0]: line.split() for line in lines[2:]}
    assert by_label["messages c1 p50 ms"][-3:] == ["0.30", "1.60", "1.30"]
    assert by_label["messages stream c1 first p50 ms"][-3:] == ["0.40", "1.40", "1.00"]
    assert by_label["messages c1 gateway CPU ms/call"][-2:] == ["0.70", "-"]
    assert by_label["messages stream c1 gateway CPU ms/stream"][-2:] == ["1.10", "-"]
    assert by_label["responses c1 p99 ms"][-3:] == ["1.00", "5.20", "4.20"]
    assert by_label["responses stream c1 last p50 ms"][-3:] == ["0.60", "2.60", "2.00"]
    assert by_label["responses c1 gateway CPU ms/call"][-2:] == ["0.60", "-"]
    assert by_label["responses stream c1 gateway CPU ms/stream"][-2:] == ["1.20", "-"]
