"""The load generator's Messages call: the bytes Anthropic's SDK would send (its path below the
base URL, the key in `x-api-key`, `anthropic-version`, the body with `max_tokens`), and the
first text of a Messages stream found where Anthropic writes it; its Responses call (the key as
a bearer, the prompt as the input, `max_output_tokens`) and the text of a Responses stream in
its `response.output_text.delta` events alone; and a target's own headers (how a gateway that
routes by headers is told where a call goes), sent after the key."""

from __future__ import annotations

import orjson

from bench import deploy
from bench.loadgen import Target
from testkit.fake_responses import ResponsesAnswer
from testkit.fake_upstream import Behaviour

TARGET = Target(
    "momor", "http://127.0.0.1:8000/v1", "sk-momor-alice", "bench/claude", api="messages"
)


def split(raw: bytes) -> tuple[list[str], dict[str, object]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return head.decode().split("\r\n"), orjson.loads(body)


def test_a_messages_call_is_sent_as_anthropics_sdk_sends_it() -> None:
    lines, body = split(TARGET.request(stream=False))

    assert lines == [
        "POST /v1/messages HTTP/1.1",
        "Host: 127.0.0.1:8000",
        "x-api-key: sk-momor-alice",
        "anthropic-version: 2023-06-01",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(orjson.dumps(body))}",
    ]
    assert body == {
        "model": "bench/claude",
        "messages": [{"role": "user", "content": "Say hello in twenty pieces."}],
        "max_tokens": 64,
    }


def test_a_streamed_messages_call_asks_for_events() -> None:
    direct = Target(
        "direct", "http://127.0.0.1:9000/anthropic/v1", "sk-fake", "claude-fast", api="messages"
    )

    lines, body = split(direct.request(stream=True))

    assert lines[0] == "POST /anthropic/v1/messages HTTP/1.1"
    assert "Accept: text/event-stream" in lines
    assert body["stream"] is True


def event(name: str, data: dict[str, object]) -> bytes:
    """One event of a Messages stream, as Anthropic writes it."""
    return f"event: {name}\ndata: ".encode() + orjson.dumps({"type": name, **data}) + b"\n\n"


def test_the_first_text_of_a_messages_stream_is_its_first_non_empty_text_delta() -> None:
    start = event("content_block_start", {"content_block": {"type": "text", "text": ""}})
    delta = event("content_block_delta", {"delta": {"type": "text_delta", "text": "w00 "}})
    opening = event("message_start", {"message": {"content": []}})

    assert TARGET.text_mark.findall(opening + start) == []
    assert len(TARGET.text_mark.findall(start + delta + delta)) == 2


RESPONSES = Target(
    "momor", "http://127.0.0.1:8000/v1", "sk-momor-alice", "bench/gpt", api="responses"
)


def test_a_responses_call_carries_the_prompt_as_its_input_and_the_key_as_a_bearer() -> None:
    lines, body = split(RESPONSES.request(stream=False))

    assert lines == [
        "POST /v1/responses HTTP/1.1",
        "Host: 127.0.0.1:8000",
        "Authorization: Bearer sk-momor-alice",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(orjson.dumps(body))}",
    ]
    assert body == {
        "model": "bench/gpt", "input": "Say hello in twenty pieces.", "max_output_tokens": 64,
    }  # fmt: skip


def test_a_streamed_responses_call_asks_for_events() -> None:
    lines, body = split(RESPONSES.request(stream=True))

    assert "Accept: text/event-stream" in lines
    assert body["stream"] is True


def test_a_responses_stream_shows_text_in_each_non_empty_output_text_delta() -> None:
    behaviour = Behaviour(text=deploy.ANSWER, chunks=deploy.CHUNKS)
    answer = ResponsesAnswer({"model": deploy.RESPONSES_UPSTREAM_ID, "stream": True})
    events = answer.events(behaviour)
    opening = b"".join(events.head)
    first_delta = next(e for e in events.body if b"response.output_text.delta" in e)

    assert RESPONSES.text_mark.findall(opening) == []
    assert len(RESPONSES.text_mark.findall(b"".join(events.body + events.tail))) == deploy.CHUNKS
    assert first_delta.startswith(b"event: response.output_text.delta\ndata: {")
    assert b'"delta":"w00 "' in first_delta


def test_a_responses_stream_counts_no_other_delta_as_text() -> None:
    reasoning = b'data: {"type":"response.reasoning_summary_text.delta","delta":"think"}\n\n'
    arguments = b'data: {"type":"response.function_call_arguments.delta","delta":"{"}\n\n'
    empty = b'data: {"type":"response.output_text.delta","delta":""}\n\n'
    spaced = b'data: {"type": "response.output_text.delta", "delta": "w00 "}\n\n'

    assert RESPONSES.text_mark.findall(reasoning + arguments + empty) == []
    assert len(RESPONSES.text_mark.findall(spaced + spaced)) == 2


def test_a_chat_stream_is_still_read_by_its_content() -> None:
    chat = Target("momor", "http://127.0.0.1:8000/v1", "sk-momor-alice", "bench/fast")
    chunk = b'data: {"choices":[{"delta":{"content":"w00 "}}]}\n\n'

    assert len(chat.text_mark.findall(chunk)) == 1
    assert chat.streams and TARGET.streams
    assert not Target("e", "http://127.0.0.1:1/v1", "k", "m", api="embeddings").streams


CHAT_HEAD = [
    "POST /v1/chat/completions HTTP/1.1",
    "Host: 127.0.0.1:8787",
    "Authorization: Bearer sk-fake",
    "Content-Type: application/json",
    "Accept: application/json",
]


def test_a_chat_call_without_headers_of_its_own_sends_the_key_alone() -> None:
    chat = Target("gw", "http://127.0.0.1:8787/v1", "sk-fake", "fast")

    lines, body = split(chat.request(stream=False))

    assert lines == [*CHAT_HEAD, f"Content-Length: {len(orjson.dumps(body))}"]


def test_a_targets_headers_follow_the_key_in_their_order() -> None:
    routed = (("x-portkey-provider", "openai"), ("x-portkey-custom-host", "http://127.0.0.1:9/v1"))
    chat = Target("gw", "http://127.0.0.1:8787/v1", "sk-fake", "fast", headers=routed)

    lines, body = split(chat.request(stream=True))

    assert lines == [
        *CHAT_HEAD[:3],
        "x-portkey-provider: openai",
        "x-portkey-custom-host: http://127.0.0.1:9/v1",
        "Content-Type: application/json",
        "Accept: text/event-stream",
        f"Content-Length: {len(orjson.dumps(body))}",
    ]
    assert body["stream"] is True
