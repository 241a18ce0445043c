"""Answers in the Responses API's shape, pure: a Chat Completions answer as a Response, a Chat
Completions stream as the `response.*` events in OpenAI's order, and OpenAI's own answers read
for the record. Every Response and event is checked against the openai SDK's own types."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from gateway.providers.contract import Event, StreamFailed, Usage
from gateway.providers.responses.chat_events import ChatEvents
from gateway.providers.responses.from_chat import response_of
from gateway.providers.responses.native import ResponsesStream, native_reply
from gateway.providers.responses.wire import (
    event_bytes,
    momor_reasoning,
    responses_usage,
    usage_of,
)

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
RID = "0123abcd"
REQUEST: dict[str, Any] = {"input": "hi", "instructions": "Be brief.", "max_output_tokens": 64}
USAGE = {
    "prompt_tokens": 12,
    "completion_tokens": 7,
    "total_tokens": 19,
    "prompt_tokens_details": {"cached_tokens": 4},
    "completion_tokens_details": {"reasoning_tokens": 2},
    "cost": 0.001,
}
DETAILS = [{"type": "reasoning.text", "text": "Hm.", "signature": "sig"}]


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": RID,
        "object": "chat.completion",
        "created": 1700000000,
        "model": "mistral/mistral-small",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def test_a_text_answer_is_a_response_with_a_message() -> None:
    out = response_of(completion({"role": "assistant", "content": "Hi."}), REQUEST, encrypted=False)
    Response.model_validate(out)
    assert (out["id"], out["object"], out["status"], out["model"], out["created_at"]) == (
        f"resp_{RID}", "response", "completed", "mistral/mistral-small", 1700000000,
    )  # fmt: skip
    assert (out["instructions"], out["max_output_tokens"], out["store"]) == ("Be brief.", 64, False)
    assert out["output"] == [
        {"id": f"msg_{RID}_0", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "annotations": [], "text": "Hi."}]},
    ]  # fmt: skip
    assert out["usage"] == {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 19,
    }


def test_reasoning_and_tool_calls_are_items_in_openai_s_order() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "reasoning": "Hm.",
        "reasoning_details": DETAILS,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    out = response_of(completion(message, "tool_calls"), REQUEST, encrypted=True)
    Response.model_validate(out)
    assert out["output"] == [
        {"id": f"rs_{RID}_0", "type": "reasoning",
         "summary": [{"type": "summary_text", "text": "Hm."}],
         "encrypted_content": momor_reasoning(DETAILS)},
        {"id": f"fc_{RID}_1", "type": "function_call", "status": "completed",
         "arguments": "{}", "call_id": "call_1", "name": "f"},
    ]  # fmt: skip
    without = response_of(completion(message, "tool_calls"), REQUEST, encrypted=False)
    assert "encrypted_content" not in without["output"][0]


AGENTS = {
    "type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
    "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}],
}  # fmt: skip
SPAWN = {"name": "multi_agent_v1__spawn_agent", "arguments": "{}"}
WITH_AGENTS: dict[str, Any] = {**REQUEST, "tools": [AGENTS]}


def test_a_call_to_a_namespace_s_function_names_its_namespace() -> None:
    message = {"role": "assistant", "content": None,
               "tool_calls": [{"id": "call_1", "type": "function", "function": SPAWN}]}  # fmt: skip
    out = response_of(completion(message, "tool_calls"), WITH_AGENTS, encrypted=False)
    Response.model_validate(out)
    assert out["output"] == [
        {"id": f"fc_{RID}_0", "type": "function_call", "status": "completed", "arguments": "{}",
         "call_id": "call_1", "name": "spawn_agent", "namespace": "multi_agent_v1"},
    ]  # fmt: skip
    alone = response_of(completion(message, "tool_calls"), REQUEST, encrypted=False)
    assert (alone["output"][0]["name"], "namespace" in alone["output"][0]) == (SPAWN["name"], False)


@pytest.mark.parametrize(
    ("finish", "status", "reason"),
    [("length", "incomplete", "max_output_tokens"), ("content_filter", "incomplete",
     "content_filter"), ("stop", "completed", None)],
)  # fmt: skip
def test_the_finish_reason_is_the_status(finish: str, status: str, reason: str | None) -> None:
    out = response_of(completion({"content": "x"}, finish), REQUEST, encrypted=False)
    assert out["status"] == status
    assert out["incomplete_details"] == (None if reason is None else {"reason": reason})


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> Any:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": RID, "object": "chat.completion.chunk", "created": 1700000000,
            "model": "mistral/mistral-small", "choices": choices, **extra}  # fmt: skip


def streamed(chunks: list[Any], *, encrypted: bool = False, done: bool = True) -> list[Any]:
    writer = ChatEvents(REQUEST, encrypted=encrypted)
    events = [event for c in chunks for event in writer.chunk(c)]
    events += writer.done() if done else []
    for event in events:
        EVENTS.validate_python(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


def test_a_text_stream_is_openai_s_event_sequence() -> None:
    events = streamed([
        chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}),
        chunk({"content": "lo"}), chunk({}, "stop"), chunk(usage=USAGE),
    ])  # fmt: skip
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert events[0]["response"]["id"] == f"resp_{RID}"
    assert events[0]["response"]["status"] == "in_progress"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "Hel", "lo",
    ]  # fmt: skip
    assert events[6]["text"] == "Hello"
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    usage = Usage.from_openai(USAGE)
    assert usage is not None
    assert completed["usage"] == responses_usage(usage)
    assert completed["output"] == [events[8]["item"]]
    assert events[8]["item"]["content"][0]["text"] == "Hello"


def test_reasoning_then_text_then_calls_each_close_in_turn() -> None:
    events = streamed(
        [
            chunk({"reasoning": "Let me "}), chunk({"reasoning": "see."}),
            chunk({"reasoning_details": DETAILS}), chunk({"content": "Calling."}),
            chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "f", "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 1, "id": "call_2", "type": "function",
                                   "function": {"name": "g", "arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
            chunk({}, "tool_calls"),
        ],
        encrypted=True,
    )  # fmt: skip
    kinds = [(e["type"], e.get("output_index")) for e in events]
    assert kinds == [
        ("response.created", None), ("response.in_progress", None),
        ("response.output_item.added", 0), ("response.reasoning_summary_part.added", 0),
        ("response.reasoning_summary_text.delta", 0), ("response.reasoning_summary_text.delta", 0),
        ("response.reasoning_summary_text.done", 0), ("response.reasoning_summary_part.done", 0),
        ("response.output_item.done", 0),
        ("response.output_item.added", 1), ("response.content_part.added", 1),
        ("response.output_text.delta", 1),
        ("response.output_text.done", 1), ("response.content_part.done", 1),
        ("response.output_item.done", 1),
        ("response.output_item.added", 2), ("response.output_item.added", 3),
        ("response.function_call_arguments.delta", 3),
        ("response.function_call_arguments.delta", 2),
        ("response.function_call_arguments.delta", 2),
        ("response.function_call_arguments.done", 2), ("response.output_item.done", 2),
        ("response.function_call_arguments.done", 3), ("response.output_item.done", 3),
        ("response.completed", None),
    ]  # fmt: skip
    output = events[-1]["response"]["output"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "Let me see."}]
    assert output[0]["encrypted_content"] == momor_reasoning(DETAILS)
    assert [(o["call_id"], o["name"], o["arguments"]) for o in output[2:]] == [
        ("call_1", "f", '{"a":1}'), ("call_2", "g", "{}"),
    ]  # fmt: skip
    assert events[-1]["response"]["usage"] is None


def test_a_streamed_call_to_a_namespace_s_function_names_its_namespace() -> None:
    writer = ChatEvents(WITH_AGENTS, encrypted=False)
    call = {"index": 0, "id": "call_1", "type": "function", "function": SPAWN}
    events = writer.chunk(chunk({"tool_calls": [call]})) + writer.done()
    for event in events:
        EVENTS.validate_python(event)
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert (added["item"]["namespace"], added["item"]["name"]) == ("multi_agent_v1", "spawn_agent")
    [done] = events[-1]["response"]["output"]
    assert (done["namespace"], done["name"], done["arguments"]) == (
        "multi_agent_v1", "spawn_agent", "{}",
    )  # fmt: skip


def test_a_finish_on_length_ends_incomplete() -> None:
    events = streamed([chunk({"content": "a"}), chunk({}, "length")])
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_an_error_chunk_ends_on_error_and_response_failed() -> None:
    broken = chunk({"content": ""}, "error", error={"code": 502, "message": "Upstream broke."})
    events = streamed([chunk({"content": "Par"}), broken], done=False)
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert (events[-2]["code"], events[-2]["message"]) == ("server_error", "Upstream broke.")
    assert events[-2]["error"] == {
        "type": "server_error", "code": "server_error", "message": "Upstream broke.",
        "param": None,
    }  # fmt: skip
    failed = events[-1]["response"]
    assert (failed["status"], failed["error"]) == (
        "failed", {"code": "server_error", "message": "Upstream broke."},
    )  # fmt: skip
    assert failed["output"][0]["status"] == "incomplete"
    assert failed["output"][0]["content"][0]["text"] == "Par"


def test_an_event_is_written_as_openai_writes_it() -> None:
    event = {"type": "response.output_text.delta", "sequence_number": 3, "delta": "é"}
    assert event_bytes(event) == (
        b"event: response.output_text.delta\ndata: " + orjson.dumps(event) + b"\n\n"
    )


OPENAI_USAGE = {
    "input_tokens": 30,
    "input_tokens_details": {"cached_tokens": 10},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 4},
    "total_tokens": 39,
}


def test_openai_s_usage_reads_as_chat_usage() -> None:
    assert usage_of(OPENAI_USAGE) == Usage(
        prompt_tokens=30, completion_tokens=9, cached_tokens=10, reasoning_tokens=4
    )
    assert usage_of(None) is None


def test_a_plain_response_is_read_for_its_usage_and_end() -> None:
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    body = {"object": "response", "status": "completed", "usage": OPENAI_USAGE, "output": [call]}
    reply = native_reply(orjson.dumps(body))
    assert (reply.finish, reply.native_finish, reply.failure) == ("tool_calls", "completed", None)
    assert reply.usage is not None and reply.usage.prompt_tokens == 30
    details = {"reason": "max_output_tokens"}
    cut = native_reply(
        orjson.dumps({**body, "status": "incomplete", "incomplete_details": details})
    )
    assert (cut.finish, cut.native_finish) == ("length", "max_output_tokens")
    error = {"code": "server_error", "message": "x"}
    failed = native_reply(orjson.dumps({**body, "status": "failed", "error": error}))
    assert failed.failure is not None and failed.failure.message == "x"
    with pytest.raises(ValueError, match="not a Response"):
        native_reply(b'{"object": "chat.completion"}')


def feed(reader: ResponsesStream, event: dict[str, Any]) -> list[Any]:
    return reader.feed(Event(orjson.dumps(event).decode(), str(event["type"])))


def test_a_native_stream_is_read_as_chat_chunks_for_the_record() -> None:
    reader = ResponsesStream()
    assert feed(reader, {"type": "response.created", "sequence_number": 0,
                         "response": {"id": "r"}}) == []  # fmt: skip
    assert reader.response == {"id": "r"}
    text = feed(reader, {"type": "response.output_text.delta", "sequence_number": 1,
                         "output_index": 0, "delta": "abc"})  # fmt: skip
    assert [c["choices"][0]["delta"] for c in text] == [{"content": "abc"}]
    item = {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": ""}
    added = feed(reader, {"type": "response.output_item.added", "sequence_number": 2,
                          "output_index": 1, "item": item})  # fmt: skip
    assert added[0]["choices"][0]["delta"] == {"tool_calls": [
        {"index": 0, "id": "call_9", "type": "function",
         "function": {"name": "f", "arguments": ""}}]}  # fmt: skip
    fragment = feed(reader, {"type": "response.function_call_arguments.delta",
                             "sequence_number": 3, "output_index": 1, "delta": "{}"})  # fmt: skip
    assert fragment[0]["choices"][0]["delta"] == {
        "tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]
    }
    output = [item]
    final = {"id": "r", "status": "completed", "usage": OPENAI_USAGE, "output": output}
    ended = feed(reader, {"type": "response.completed", "sequence_number": 4, "response": final})
    assert ended[0]["choices"][0]["finish_reason"] == "tool_calls"
    state = reader.state
    assert (state.finished, state.finish_reason, state.native_finish_reason) == (
        True, "tool_calls", "completed",
    )  # fmt: skip
    assert (state.usage, reader.sequence) == (usage_of(OPENAI_USAGE), 4)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "sequence_number": 2,
         "error": {"type": "server_error", "code": "server_error", "message": "Gone.",
                   "param": None}},
        {"type": "error", "sequence_number": 2, "code": "server_error", "message": "Gone."},
        {"type": "response.failed", "sequence_number": 2,
         "response": {"status": "failed", "error": {"code": "server_error", "message": "Gone."}}},
    ],
)  # fmt: skip
def test_a_failed_native_stream_raises_and_moves_on(event: dict[str, Any]) -> None:
    with pytest.raises(StreamFailed) as caught:
        feed(ResponsesStream(), event)
    assert caught.value.failure.message == "Gone."
    assert caught.value.failure.moves_on
    with pytest.raises(ValueError, match="not a Responses event"):
        ResponsesStream().feed(Event("[1]"))
