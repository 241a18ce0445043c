"""Chat Completions answers written in Messages' shape, pure: a plain answer as Anthropic's
message, a stream's chunks as Anthropic's events in their order, and the stream wrapper closing
the relay's stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from gateway.relay.messages.events import MessagesEvents, MessagesStream
from gateway.relay.messages.message import messages_answer, messages_usage
from tests.gateway.edge.messages_world import sse

USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "prompt_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 10},
    "completion_tokens_details": {"reasoning_tokens": 5},
    "cost": 0.1,
}
ANTHROPIC_USAGE = {
    "input_tokens": 60,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 30,
    "output_tokens": 20,
}


def completion(message: dict[str, Any], finish: str | None = "stop") -> dict[str, Any]:
    return {
        "id": "a1b2",
        "object": "chat.completion",
        "model": "openai/gpt-5",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def test_a_plain_answer_as_a_message() -> None:
    message = {
        "role": "assistant",
        "content": "Calling.",
        "reasoning": "I should call it.",
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "noop", "arguments": "not json"}},
        ],
    }  # fmt: skip
    assert messages_answer(completion(message, "tool_calls")) == {
        "id": "msg_a1b2",
        "type": "message",
        "role": "assistant",
        "model": "openai/gpt-5",
        "content": [
            {"type": "thinking", "thinking": "I should call it.", "signature": ""},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "c2", "name": "noop", "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": ANTHROPIC_USAGE,
    }


def test_reasoning_details_holding_anthropics_state_are_its_blocks() -> None:
    message = {
        "role": "assistant",
        "content": "Hi.",
        "reasoning": "Think.",
        "reasoning_details": [
            {"type": "reasoning.text", "text": "Think.", "data": {"anthropic.signature": "s"}},
            {"type": "reasoning.encrypted", "data": {"anthropic.redacted": "r"}},
            {"type": "reasoning.text", "text": "Gemini's", "data": {"gemini.signature": "g"}},
        ],
    }
    assert messages_answer(completion(message))["content"] == [
        {"type": "thinking", "thinking": "Think.", "signature": "s"},
        {"type": "redacted_thinking", "data": "r"},
        {"type": "text", "text": "Hi."},
    ]


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "refusal"),
        ("error", "end_turn"),
        (None, "end_turn"),
    ],
)
def test_stop_reasons(finish: str | None, stop: str) -> None:
    answer = completion({"role": "assistant", "content": "x"}, finish)
    assert messages_answer(answer)["stop_reason"] == stop


def test_a_refusal_is_its_text() -> None:
    message = {"role": "assistant", "content": None, "refusal": "I can't."}
    assert messages_answer(completion(message, "content_filter"))["content"] == [
        {"type": "text", "text": "I can't."}
    ]


def test_usage_without_cache_counts() -> None:
    assert messages_usage({"prompt_tokens": 7, "completion_tokens": 3}) == {
        "input_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 3,
    }


# Streams


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "a1b2",
        "model": "openai/gpt-5",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def translated(chunks: list[dict[str, Any]], done: bool = True) -> list[tuple[str, Any]]:
    events = MessagesEvents()
    out = [data for c in chunks for data in events.feed(c)]
    if done:
        out += events.done()
    return sse(b"".join(out).decode())


def test_a_stream_of_thinking_text_and_tool_calls() -> None:
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "weather", "arguments": ""}}  # fmt: skip
    events = translated(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning": "Hm"}),
            chunk({"reasoning": "m."}),
            chunk({"content": "Let me "}),
            chunk({"content": "check."}),
            chunk({"tool_calls": [call]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            chunk({}, "tool_calls"),
            {"id": "a1b2", "model": "openai/gpt-5", "choices": [], "usage": USAGE},
        ]
    )
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_a1b2", "type": "message", "role": "assistant", "model": "openai/gpt-5",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 0},
        },
    }  # fmt: skip

    def delta(index: int, value: dict[str, Any]) -> tuple[str, Any]:
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": index,
            "delta": value,
        }

    def block(name: str, index: int, **more: Any) -> tuple[str, Any]:
        return name, {"type": name, "index": index, **more}

    assert events == [
        ("message_start", start),
        ("ping", {"type": "ping"}),
        block("content_block_start", 0,
              content_block={"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Hm"}),
        delta(0, {"type": "thinking_delta", "thinking": "m."}),
        block("content_block_stop", 0),
        block("content_block_start", 1, content_block={"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Let me "}),
        delta(1, {"type": "text_delta", "text": "check."}),
        block("content_block_stop", 1),
        block("content_block_start", 2, content_block={
            "type": "tool_use", "id": "c1", "name": "weather", "input": {}}),
        delta(2, {"type": "input_json_delta", "partial_json": '{"city":'}),
        delta(2, {"type": "input_json_delta", "partial_json": '"Paris"}'}),
        block("content_block_stop", 2),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": ANTHROPIC_USAGE}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip


def test_parallel_tool_calls_are_blocks_of_their_own() -> None:
    events = translated(
        [
            chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "a"}}]}),
            chunk({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "b"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        ]
    )
    starts = [d["content_block"]["id"] for n, d in events if n == "content_block_start"]
    deltas = [d["index"] for n, d in events if n == "content_block_delta"]
    assert (starts, deltas) == (["c1", "c2"], [0])


def test_an_error_chunk_after_output_is_one_error_event() -> None:
    broken = {
        "id": "a1b2",
        "model": "m",
        "error": {"code": 502, "message": "It broke."},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    events = translated([chunk({"content": "Hi"}), broken], done=False)
    assert [name for name, _ in events] == [
        "message_start", "ping", "content_block_start", "content_block_delta", "error",
    ]  # fmt: skip
    assert events[-1][1] == {
        "type": "error",
        "error": {"type": "api_error", "message": "It broke."},
    }


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (529, "overloaded_error"),
        (503, "overloaded_error"),
        (429, "rate_limit_error"),
        ("x", "api_error"),
    ],
)
def test_an_error_events_type_follows_its_code(code: object, kind: str) -> None:
    events = translated([{"error": {"code": code, "message": "m"}}], done=False)
    assert events[-1] == ("error", {"type": "error", "error": {"type": kind, "message": "m"}})


class Closing:
    """An async generator's stand-in that says whether it was closed."""

    def __init__(self, items: list[bytes]) -> None:
        self.items, self.closed = iter(items), False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        try:
            return next(self.items)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.closed = True


def data(value: Any) -> bytes:
    return b"data: " + (value if isinstance(value, bytes) else orjson.dumps(value)) + b"\n\n"


def test_the_stream_reads_the_relays_sse_and_closes_it() -> None:
    inner = Closing(
        [data(chunk({"content": "Hi"})) + data(chunk({}, "stop")), b"", data(b"[DONE]")]
    )
    stream = MessagesStream(inner)

    async def read() -> list[bytes]:
        out = [piece async for piece in stream]
        await stream.aclose()
        return out

    pieces = asyncio.run(read())
    assert all(pieces)  # nothing empty is sent
    names = [name for name, _ in sse(b"".join(pieces).decode())]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert inner.closed


def test_closing_the_stream_before_it_is_read_closes_the_relays() -> None:
    inner = Closing([])
    asyncio.run(MessagesStream(inner).aclose())
    assert inner.closed
