"""The peer gateways' targets in a run's report: governed Momor's saturated throughput over
LiteLLM's (at least 30x) and over Portkey's gateway's (at least 1x, as many calls per core),
each with the CPU-per-call ratio beside it, and n/a with the option that measures the peer
when it was not measured."""

from __future__ import annotations

from typing import Any

from bench.report import EMBEDDED, table, targets

PORTKEY_TARGET = "governed Momor carries at least as many calls per core as Portkey's gateway"
LITELLM_TARGET = "throughput vs one LiteLLM worker (governed)"


def measured(name: str, rps: float, cpu_bound_rps: float | None) -> dict[str, Any]:
    """A section with its saturated throughput alone (direct at 4,000 req/s)."""
    throughput = {"rps": rps, "cpu_bound_rps": cpu_bound_rps}
    return {
        "gateway": name, "server": "uvicorn" if name.startswith("momor") else "",
        "deployment": "governed" if name.startswith("momor") else name,
        "direct": {"throughput": {"rps": 4000.0}}, "target": {"throughput": throughput},
        "added": {"throughput_share_of_direct": round(rps / 4000.0, 3)},
    }  # fmt: skip


def goals_of(*sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["target"]: g for g in targets(list(sections))}


def test_governed_momor_against_portkey_is_its_throughput_over_portkeys() -> None:
    goals = goals_of(measured("momor-uvicorn", 2900.0, 3700.0), measured("portkey", 1450.0, 1850.0))

    assert goals[PORTKEY_TARGET] == {
        "target": PORTKEY_TARGET, "value": 2.0, "limit": ">= 1.0 x", "met": True,
        "note": "2,900 vs 1,450 req/s; by CPU per call (contention-free estimate): 2.0x",
    }  # fmt: skip


def test_fewer_calls_than_portkey_misses_and_a_missing_cpu_ratio_is_left_out() -> None:
    goals = goals_of(measured("momor-uvicorn", 900.0, None), measured("portkey", 1000.0, 1200.0))

    goal = goals[PORTKEY_TARGET]
    assert (goal["value"], goal["met"]) == (0.9, False)
    assert goal["note"] == "900 vs 1,000 req/s"


def test_a_peer_not_measured_reads_n_a_with_its_option() -> None:
    goals = goals_of(measured("momor-uvicorn", 2900.0, 3700.0))

    for name, option in ((PORTKEY_TARGET, "--portkey"), (LITELLM_TARGET, "--litellm")):
        assert (goals[name]["value"], goals[name]["met"]) == (None, None)
        assert goals[name]["note"] == f"not measured: {option} measures it"


def test_litellm_is_held_to_30x() -> None:
    goals = goals_of(measured("momor-uvicorn", 2900.0, 3700.0), measured("litellm", 90.0, 90.0))
    short = goals_of(measured("momor-uvicorn", 2600.0, 3700.0), measured("litellm", 90.0, 90.0))

    assert (goals[LITELLM_TARGET]["value"], goals[LITELLM_TARGET]["limit"]) == (32.22, ">= 30.0 x")
    assert goals[LITELLM_TARGET]["met"] is True
    assert (short[LITELLM_TARGET]["value"], short[LITELLM_TARGET]["met"]) == (28.89, False)


def test_the_embedded_mode_is_held_to_nine_tenths_of_governed_throughput() -> None:
    plain = measured("momor-plain-uvicorn", 2700.0, None) | {"deployment": "embedded"}
    slow = measured("momor-plain-uvicorn", 2500.0, None) | {"deployment": "embedded"}

    met = goals_of(measured("momor-uvicorn", 2900.0, 3700.0), plain)[EMBEDDED]
    missed = goals_of(measured("momor-uvicorn", 2900.0, 3700.0), slow)[EMBEDDED]
    absent = goals_of(measured("momor-uvicorn", 2900.0, 3700.0))[EMBEDDED]

    assert (met["value"], met["met"], met["note"]) == (0.93, True, "2,700 vs 2,900 req/s")
    assert (missed["value"], missed["met"]) == (0.86, False)
    assert absent["note"] == "not measured: --plain measures it"


def test_the_table_has_a_column_for_portkey_beside_its_direct_baseline() -> None:
    report = {
        "sections": [measured("momor-uvicorn", 2900.0, 3700.0), measured("portkey", 1450.0, 1850.0)]
    }

    head, _, *rows = table(report).splitlines()

    assert head.split()[-3:] == ["direct[portkey]", "portkey", "added"]
    throughput = next(r for r in rows if r.startswith("throughput req/s"))
    assert throughput.split()[-3:] == ["4,000", "1,450", "0.36x"]
