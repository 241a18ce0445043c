"""The fake upstream over real HTTP: its default OpenAI answers, every scripting key, the record
of calls, and the official openai SDK reading what it sends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fake_upstream_fixture import FakeUpstream

ASK = [{"role": "user", "content": "What is the capital of France?"}]
SDK_ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": ASK[0]["content"]}]
FINGERPRINT = "fp_fake_upstream"
DEFAULT_USAGE = {
    "prompt_tokens": 6,
    "completion_tokens": 5,
    "total_tokens": 11,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}
DEFAULT_PIECES = ["Hello", " from", " the", " fake", " upstream."]


def call(
    fake: FakeUpstream, body: dict[str, Any], path: str = "/v1/chat/completions", **kw: Any
) -> httpx.Response:
    return httpx.post(fake.url + path, json=body, trust_env=False, **kw)


def ask(model: str, **fields: Any) -> dict[str, Any]:
    return {"model": model, "messages": ASK, **fields}


def streamed(fake: FakeUpstream, model: str, **fields: Any) -> list[Any]:
    response = call(fake, ask(model, stream=True, **fields))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    return sse_data(response.text)


def sse_data(text: str) -> list[Any]:
    """The `data:` payloads of a whole SSE body, checking its framing on the way."""
    assert text.endswith("\n\n")
    events = text.removesuffix("\n\n").split("\n\n")
    assert all(event.startswith("data: ") for event in events)
    return [_payload(event.removeprefix("data: ")) for event in events]


def _payload(data: str) -> Any:
    return data if data == "[DONE]" else orjson.loads(data)


def chunk(
    first: dict[str, Any], delta: dict[str, Any], finish: str | None = None, **trailer: Any
) -> dict[str, Any]:
    """An OpenAI stream chunk of the same call as `first`."""
    return {
        "id": first["id"],
        "object": "chat.completion.chunk",
        "created": first["created"],
        "model": first["model"],
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **trailer,
    }


def usage_chunk(first: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return {**chunk(first, {}), "choices": [], "usage": usage}


def completion(
    first: dict[str, Any],
    message: dict[str, Any],
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": first["id"],
        "object": "chat.completion",
        "created": first["created"],
        "model": first["model"],
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": DEFAULT_USAGE if usage is None else usage,
        "system_fingerprint": FINGERPRINT,
    }


def answer(content: str | None, **fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "refusal": None, **fields}


def sdk(fake: FakeUpstream, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/v1", api_key="x", max_retries=0, **kw)


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


@pytest.fixture
def client(fake: FakeUpstream) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, trust_env=False) as http:
        yield http


# The unscripted answer


def test_it_reports_health(fake: FakeUpstream) -> None:
    response = httpx.get(fake.url + "/_fake/health", trust_env=False)

    assert (response.status_code, response.json()) == (200, {"ok": True})


def test_it_answers_an_unscripted_model_with_a_full_chat_completion(fake: FakeUpstream) -> None:
    response = call(fake, ask("gpt-4o-mini"))

    body = response.json()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert body["id"].startswith("chatcmpl-")
    assert abs(body["created"] - time.time()) < 60
    assert body == completion(body, answer("Hello from the fake upstream."))
    assert body["model"] == "gpt-4o-mini"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/openai/v1/chat/completions",
        "/openai/deployments/x/chat/completions",
    ],
)
def test_it_answers_on_any_path_ending_in_chat_completions(fake: FakeUpstream, path: str) -> None:
    response = call(fake, ask("gpt-4o"), path=path)

    assert response.status_code == 200
    assert fake.requests()[0]["path"] == path


def test_it_does_not_answer_other_paths(fake: FakeUpstream) -> None:
    assert call(fake, ask("gpt-4o"), path="/v1/xchat/completions").status_code == 404
    assert call(fake, ask("gpt-4o"), path="/v1/completions").status_code == 404


def test_it_streams_the_default_answer_like_openai(fake: FakeUpstream) -> None:
    events = streamed(fake, "gpt-4o")

    first = events[0]
    assert events == [
        chunk(first, {"role": "assistant", "content": "", "refusal": None}),
        *[chunk(first, {"content": piece}) for piece in DEFAULT_PIECES],
        chunk(first, {}, "stop"),
        "[DONE]",
    ]
    assert first["id"].startswith("chatcmpl-")
    assert first["model"] == "gpt-4o"


def test_it_streams_usage_last_and_null_usage_before_when_asked(fake: FakeUpstream) -> None:
    events = streamed(fake, "gpt-4o", stream_options={"include_usage": True})

    first = events[0]
    assert events == [
        chunk(first, {"role": "assistant", "content": "", "refusal": None}, usage=None),
        *[chunk(first, {"content": piece}, usage=None) for piece in DEFAULT_PIECES],
        chunk(first, {}, "stop", usage=None),
        usage_chunk(first, DEFAULT_USAGE),
        "[DONE]",
    ]


def test_it_streams_no_usage_when_include_usage_is_false(fake: FakeUpstream) -> None:
    events = streamed(fake, "gpt-4o", stream_options={"include_usage": False})

    assert all("usage" not in event for event in events[:-1])
    assert len(events) == 8


def test_it_counts_prompt_words_over_every_message_and_text_part(fake: FakeUpstream) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one two"},
                {"type": "image_url", "image_url": {}},
            ],
        },
        {"role": "assistant", "content": None, "tool_calls": []},
    ]

    body = call(fake, {"model": "gpt-4o", "messages": messages}).json()

    assert body["usage"]["prompt_tokens"] == 4


def test_it_counts_at_least_one_prompt_token(fake: FakeUpstream) -> None:
    body = call(fake, {"model": "gpt-4o", "messages": [{"role": "user", "content": ""}]}).json()

    assert body["usage"]["prompt_tokens"] == 1


# Malformed calls


def invalid(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", invalid("We could not parse the JSON body of your request.")),
        (b"", invalid("We could not parse the JSON body of your request.")),
        (
            b"[1]",
            invalid(
                "Invalid type for body: expected an object, but got an array instead.",
                None,
                "invalid_type",
            ),
        ),
        (
            b'{"messages": [{"role": "user", "content": "hi"}]}',
            invalid("you must provide a model parameter"),
        ),
        (
            b'{"model": "", "messages": [{"role": "user", "content": "hi"}]}',
            invalid("you must provide a model parameter"),
        ),
        (
            b'{"model": "gpt-4o"}',
            invalid(
                "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
            ),
        ),
        (
            b'{"model": "gpt-4o", "messages": "hi"}',
            invalid(
                "Invalid type for 'messages': expected an array, but got a string instead.",
                "messages",
                "invalid_type",
            ),
        ),
        (
            b'{"model": "gpt-4o", "messages": []}',
            invalid(
                "Invalid 'messages': empty array. Expected an array with minimum length 1, "
                "but got an empty array instead.",
                "messages",
                "empty_array",
            ),
        ),
    ],
)
def test_it_refuses_malformed_calls_like_openai(
    fake: FakeUpstream, body: bytes, error: dict[str, Any]
) -> None:
    response = httpx.post(fake.url + "/v1/chat/completions", content=body, trust_env=False)

    assert (response.status_code, response.json()) == (400, error)


def test_it_refuses_malformed_calls_even_for_a_scripted_model(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", fail={"status": 500})

    response = call(fake, {"model": "gpt-4o", "messages": []})

    assert response.status_code == 400


def test_the_sdk_raises_bad_request_for_a_malformed_call(fake: FakeUpstream) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        sdk(fake).chat.completions.create(model="gpt-4o", messages=[])

    assert raised.value.code == "empty_array"
    assert raised.value.param == "messages"


# Scripting: the answer


def test_text_replaces_the_answer_and_streams_one_chunk_per_word(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="Paris,  of course. ")

    plain = call(fake, ask("gpt-4o")).json()
    events = streamed(fake, "gpt-4o")

    assert plain["choices"][0]["message"] == answer("Paris,  of course. ")
    assert plain["usage"]["completion_tokens"] == 3
    assert [e["choices"][0]["delta"] for e in events[1:4]] == [
        {"content": "Paris,"},
        {"content": "  of"},
        {"content": " course. "},
    ]
    assert events[4]["choices"][0]["finish_reason"] == "stop"


def test_chunks_splits_the_text_into_exactly_that_many_pieces(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="abcdefgh", chunks=3)

    events = streamed(fake, "gpt-4o", stream_options={"include_usage": True})

    assert [e["choices"][0]["delta"] for e in events[1:4]] == [
        {"content": "abc"},
        {"content": "def"},
        {"content": "gh"},
    ]
    assert events[4]["choices"][0]["finish_reason"] == "stop"
    assert events[5]["usage"]["completion_tokens"] == 3


def test_chunk_delay_spaces_out_the_stream_events(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="a b", chunk_delay=0.05)
    started = time.monotonic()

    events = streamed(fake, "gpt-4o")

    assert len(events) == 5
    assert time.monotonic() - started >= 4 * 0.05


def test_reasoning_answers_under_reasoning_content_and_streams_it_first(fake: FakeUpstream) -> None:
    fake.script("deepseek-r1", text="Paris.", reasoning="France's capital is Paris.")

    plain = call(fake, ask("deepseek-r1")).json()
    events = streamed(fake, "deepseek-r1")

    assert plain["choices"][0]["message"] == answer(
        "Paris.", reasoning_content="France's capital is Paris."
    )
    assert plain["usage"]["completion_tokens"] == 5
    assert plain["usage"]["completion_tokens_details"] == {"reasoning_tokens": 4}
    assert [e["choices"][0]["delta"] for e in events[1:6]] == [
        {"reasoning_content": "France's"},
        {"reasoning_content": " capital"},
        {"reasoning_content": " is"},
        {"reasoning_content": " Paris."},
        {"content": "Paris."},
    ]


def test_reasoning_field_renames_the_reasoning(fake: FakeUpstream) -> None:
    fake.script("qwen3", text="4", reasoning="2+2", reasoning_field="reasoning")

    plain = call(fake, ask("qwen3")).json()
    events = streamed(fake, "qwen3")

    assert plain["choices"][0]["message"] == answer("4", reasoning="2+2")
    assert events[1]["choices"][0]["delta"] == {"reasoning": "2+2"}


WEATHER_CALLS = [
    {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    {"name": "get_time", "arguments": "{}", "id": "call_abc"},
]


def test_tool_calls_answer_with_calls_and_no_content(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", tool_calls=WEATHER_CALLS)

    plain = call(fake, ask("gpt-4o")).json()

    assert plain == completion(
        plain,
        answer(
            None,
            tool_calls=[
                {
                    "id": "call_fake_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        ),
        "tool_calls",
        {**DEFAULT_USAGE, "completion_tokens": 5, "total_tokens": 11},
    )


def test_tool_calls_stream_in_openai_indexed_deltas(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", tool_calls=WEATHER_CALLS)

    events = streamed(fake, "gpt-4o")

    first = events[0]
    function = {"name": "get_weather", "arguments": ""}
    assert events == [
        chunk(first, {"role": "assistant", "content": "", "refusal": None}),
        chunk(
            first,
            {
                "tool_calls": [
                    {"index": 0, "id": "call_fake_0", "type": "function", "function": function}
                ]
            },
        ),
        chunk(first, {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
        chunk(first, {"tool_calls": [{"index": 0, "function": {"arguments": ' "Paris"}'}}]}),
        chunk(
            first,
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": ""},
                    }
                ]
            },
        ),
        chunk(first, {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        chunk(first, {}, "tool_calls"),
        "[DONE]",
    ]


def test_tool_calls_follow_scripted_text(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="Checking.", tool_calls=[{"name": "get_time", "arguments": "{}"}])

    message = call(fake, ask("gpt-4o")).json()["choices"][0]["message"]

    assert message["content"] == "Checking."
    assert message["tool_calls"][0]["function"]["name"] == "get_time"


def test_finish_reason_overrides_the_finish_reason(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", finish_reason="length")

    plain = call(fake, ask("gpt-4o")).json()
    events = streamed(fake, "gpt-4o")

    assert plain["choices"][0]["finish_reason"] == "length"
    assert events[-2] == chunk(events[0], {}, "length")


def test_usage_merges_into_the_usage_and_recomputes_the_total(fake: FakeUpstream) -> None:
    fake.script(
        "gpt-4o", usage={"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 40}}
    )

    plain = call(fake, ask("gpt-4o")).json()
    events = streamed(fake, "gpt-4o", stream_options={"include_usage": True})

    expected = {
        **DEFAULT_USAGE,
        "prompt_tokens": 100,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 40},
    }
    assert plain["usage"] == expected
    assert events[-2] == usage_chunk(events[0], expected)


def test_usage_keeps_a_scripted_total(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", usage={"completion_tokens": 7, "total_tokens": 1})

    usage = call(fake, ask("gpt-4o")).json()["usage"]

    assert (usage["completion_tokens"], usage["total_tokens"]) == (7, 1)


def test_extra_merges_into_the_response_and_every_chunk(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", extra={"provider": "acme-cloud", "service_tier": "default"})

    plain = call(fake, ask("gpt-4o")).json()
    events = streamed(fake, "gpt-4o", stream_options={"include_usage": True})

    assert plain == {
        **completion(plain, answer("Hello from the fake upstream.")),
        "provider": "acme-cloud",
        "service_tier": "default",
    }
    assert all(
        e["provider"] == "acme-cloud" and e["service_tier"] == "default" for e in events[:-1]
    )
    assert len(events) == 9


def test_response_answers_that_json_verbatim(fake: FakeUpstream) -> None:
    verbatim = {"id": "cmpl-1", "choices": [], "anything": [1, 2, {"x": None}]}
    fake.script("gpt-4o", response=verbatim)

    response = call(fake, ask("gpt-4o"))

    assert (response.status_code, response.json()) == (200, verbatim)


def test_no_usage_sends_no_usage_at_all(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", no_usage=True)

    plain = call(fake, ask("gpt-4o")).json()
    events = streamed(fake, "gpt-4o", stream_options={"include_usage": True})

    assert "usage" not in plain
    first = events[0]
    assert events == [
        chunk(first, {"role": "assistant", "content": "", "refusal": None}),
        *[chunk(first, {"content": piece}) for piece in DEFAULT_PIECES],
        chunk(first, {}, "stop"),
        "[DONE]",
    ]


def test_a_script_only_changes_its_own_model(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="Scripted.")

    other = call(fake, ask("gpt-4o-mini")).json()

    assert other["choices"][0]["message"]["content"] == "Hello from the fake upstream."


def test_a_new_script_replaces_the_old_one(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="First.", finish_reason="length")
    fake.script("gpt-4o", text="Second.")

    choice = call(fake, ask("gpt-4o")).json()["choices"][0]

    assert (choice["message"]["content"], choice["finish_reason"]) == ("Second.", "stop")


# Scripting: failures


def test_fail_answers_the_status_body_and_headers(fake: FakeUpstream) -> None:
    body = {
        "error": {
            "message": "Slow down",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    fake.script("gpt-4o", fail={"status": 429, "body": body, "headers": {"Retry-After": "3"}})

    response = call(fake, ask("gpt-4o"))
    streamed_response = call(fake, ask("gpt-4o", stream=True))

    assert (response.status_code, response.json()) == (429, body)
    assert response.headers["retry-after"] == "3"
    assert response.headers["content-type"] == "application/json"
    assert (streamed_response.status_code, streamed_response.json()) == (429, body)


def test_fail_with_a_text_body_answers_text(fake: FakeUpstream) -> None:
    fake.script(
        "gpt-4o",
        fail={
            "status": 502,
            "body": "<html>Bad gateway</html>",
            "headers": {"content-type": "text/html"},
        },
    )

    response = call(fake, ask("gpt-4o"))

    assert (response.status_code, response.text) == (502, "<html>Bad gateway</html>")
    assert response.headers.get_list("content-type") == ["text/html"]


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        (400, "invalid_request_error", None),
        (401, "invalid_request_error", "invalid_api_key"),
        (429, "requests", "rate_limit_exceeded"),
        (500, "server_error", None),
        (503, "server_error", None),
    ],
)
def test_fail_without_a_body_answers_an_openai_error_object(
    fake: FakeUpstream, status: int, kind: str, code: str | None
) -> None:
    fake.script("gpt-4o", fail={"status": status})

    response = call(fake, ask("gpt-4o"))

    message = f"The fake upstream was scripted to fail with status {status}."
    assert (response.status_code, response.json()) == (
        status,
        {"error": {"message": message, "type": kind, "param": None, "code": code}},
    )


def test_fail_times_fails_only_the_first_calls(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", fail={"status": 500}, fail_times=2)

    statuses = [call(fake, ask("gpt-4o")).status_code for _ in range(4)]

    assert statuses == [500, 500, 200, 200]


def test_scripting_again_restarts_the_fail_times_count(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", fail={"status": 500}, fail_times=1)
    call(fake, ask("gpt-4o"))
    fake.script("gpt-4o", fail={"status": 500}, fail_times=1)

    assert call(fake, ask("gpt-4o")).status_code == 500


def test_delay_first_byte_holds_back_plain_and_streamed_answers(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", delay_first_byte=0.2)

    for body in (ask("gpt-4o"), ask("gpt-4o", stream=True)):
        started = time.monotonic()
        assert call(fake, body).status_code == 200
        assert time.monotonic() - started >= 0.2


def test_drop_after_cuts_the_stream_after_that_many_content_chunks(
    fake: FakeUpstream, client: httpx.Client
) -> None:
    fake.script("gpt-4o", drop_after=2)
    lines: list[str] = []

    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/v1/chat/completions", json=ask("gpt-4o", stream=True)) as response,
    ):
        lines.extend(line for line in response.iter_lines() if line)

    events = [orjson.loads(line.removeprefix("data: ")) for line in lines]
    assert [e["choices"][0]["delta"] for e in events] == [
        {"role": "assistant", "content": "", "refusal": None},
        {"content": "Hello"},
        {"content": " from"},
    ]
    assert fake.requests()[0] | {"headers": {}, "body": {}} == {
        "path": "/v1/chat/completions",
        "method": "POST",
        "headers": {},
        "body": {},
        "model": "gpt-4o",
        "disconnected": False,
        "completed": False,
    }


@pytest.mark.parametrize("stream", [False, True])
def test_drop_after_zero_closes_before_any_response(fake: FakeUpstream, stream: bool) -> None:
    fake.script("gpt-4o", drop_after=0)

    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        call(fake, ask("gpt-4o", stream=stream))

    assert fake.requests()[0]["completed"] is False


def test_stream_error_after_sends_openai_mid_stream_error_and_ends(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", stream_error_after=1)

    events = streamed(fake, "gpt-4o")

    first = events[0]
    message = "The server had an error while processing your request. Sorry about that!"
    assert events == [
        chunk(first, {"role": "assistant", "content": "", "refusal": None}),
        chunk(first, {"content": "Hello"}),
        {"error": {"message": message, "type": "server_error", "param": None, "code": None}},
    ]
    assert fake.requests()[0]["completed"] is True


def test_the_record_notices_a_client_that_leaves_mid_stream(
    fake: FakeUpstream, client: httpx.Client
) -> None:
    fake.script("gpt-4o", chunk_delay=0.2)

    with client.stream("POST", "/v1/chat/completions", json=ask("gpt-4o", stream=True)) as response:
        next(response.iter_lines())

    wait_for(lambda: fake.requests()[0]["disconnected"])
    assert fake.requests()[0]["completed"] is False


def test_the_record_notices_a_client_that_times_out_before_the_first_byte(
    fake: FakeUpstream,
) -> None:
    fake.script("gpt-4o", delay_first_byte=0.5)

    with pytest.raises(httpx.ReadTimeout):
        call(fake, ask("gpt-4o"), timeout=0.1)

    wait_for(lambda: fake.requests()[0]["disconnected"])


def test_it_refuses_a_script_with_an_unknown_key(fake: FakeUpstream) -> None:
    with pytest.raises(ValueError, match="unknown script keys: txet"):
        fake.script("gpt-4o", txet="typo")


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ({"chunks": 0}, "chunks must be an integer >= 1"),
        ({"chunk_delay": "1"}, "chunk_delay must be a number of seconds >= 0"),
        ({"tool_calls": [{"arguments": "{}"}]}, r"tool_calls\[0\].name must be a string"),
        ({"fail": {"status": 200}}, "fail.status must be an HTTP error status"),
        ({"fail_times": 1}, "fail_times needs fail"),
        ({"no_usage": 1}, "no_usage must be true or false"),
    ],
)
def test_it_refuses_a_script_with_a_wrong_value(
    fake: FakeUpstream, behaviour: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        fake.script("gpt-4o", **behaviour)


# The record of calls


def test_it_records_every_call_in_order_with_lowercase_headers(fake: FakeUpstream) -> None:
    call(fake, ask("gpt-4o"), headers={"Authorization": "Bearer sk-alice", "X-Trace": "1"})
    httpx.post(fake.url + "/v1/chat/completions", content=b"nope", trust_env=False)
    call(fake, ask("gpt-4o-mini", stream=True), path="/openai/v1/chat/completions")

    calls = fake.requests()

    assert [
        (c["path"], c["model"], c["body"], c["completed"], c["disconnected"]) for c in calls
    ] == [
        ("/v1/chat/completions", "gpt-4o", ask("gpt-4o"), True, False),
        ("/v1/chat/completions", None, None, True, False),
        (
            "/openai/v1/chat/completions",
            "gpt-4o-mini",
            ask("gpt-4o-mini", stream=True),
            True,
            False,
        ),
    ]
    assert calls[0]["method"] == "POST"
    assert calls[0]["headers"]["authorization"] == "Bearer sk-alice"
    assert calls[0]["headers"]["x-trace"] == "1"
    assert calls[0]["headers"]["content-type"] == "application/json"


def test_it_lists_the_calls_of_one_model(fake: FakeUpstream) -> None:
    call(fake, ask("gpt-4o"))
    call(fake, ask("gpt-4o-mini"))
    call(fake, ask("gpt-4o", stream=True))

    assert [c["body"].get("stream", False) for c in fake.requests("gpt-4o")] == [False, True]
    assert len(fake.requests("claude")) == 0


def test_reset_forgets_scripts_and_calls(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", text="Scripted.")
    call(fake, ask("gpt-4o"))

    fake.reset()

    assert fake.requests() == []
    assert (
        call(fake, ask("gpt-4o")).json()["choices"][0]["message"]["content"]
        == "Hello from the fake upstream."
    )


# The official SDK as the client


def test_the_sdk_reads_a_plain_answer(fake: FakeUpstream) -> None:
    result = sdk(fake).chat.completions.create(model="gpt-4o", messages=SDK_ASK)

    assert result.choices[0].message.content == "Hello from the fake upstream."
    assert result.choices[0].finish_reason == "stop"
    assert result.usage is not None
    assert (
        result.usage.prompt_tokens,
        result.usage.completion_tokens,
        result.usage.total_tokens,
    ) == (6, 5, 11)


def test_the_sdk_reads_a_streamed_answer_with_usage(fake: FakeUpstream) -> None:
    stream = sdk(fake).chat.completions.create(
        model="gpt-4o",
        messages=SDK_ASK,
        stream=True,
        stream_options={"include_usage": True},
    )

    chunks = list(stream)

    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        == "Hello from the fake upstream."
    )
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 11


def test_the_sdk_reads_streamed_tool_calls(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", tool_calls=WEATHER_CALLS)

    stream = sdk(fake).chat.completions.create(model="gpt-4o", messages=SDK_ASK, stream=True)

    arguments: dict[int, str] = {}
    for c in stream:
        for delta in c.choices[0].delta.tool_calls or []:
            arguments[delta.index] = arguments.get(delta.index, "") + (
                (delta.function and delta.function.arguments) or ""
            )
    assert arguments == {0: '{"city": "Paris"}', 1: "{}"}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_the_sdk_raises_its_error_class_for_a_scripted_failure(
    fake: FakeUpstream, status: int, error: type[openai.APIStatusError]
) -> None:
    fake.script("gpt-4o", fail={"status": status})

    with pytest.raises(error) as raised:
        sdk(fake).chat.completions.create(model="gpt-4o", messages=SDK_ASK)

    assert raised.value.status_code == status


def test_the_sdk_succeeds_once_fail_times_is_spent(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", fail={"status": 429}, fail_times=1)
    client = sdk(fake)

    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="gpt-4o", messages=SDK_ASK)
    result = client.chat.completions.create(model="gpt-4o", messages=SDK_ASK)

    assert result.choices[0].message.content == "Hello from the fake upstream."


def test_the_sdk_raises_api_error_on_a_mid_stream_error(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", stream_error_after=2)
    stream = sdk(fake).chat.completions.create(model="gpt-4o", messages=SDK_ASK, stream=True)

    with pytest.raises(openai.APIError, match="Sorry about that"):
        list(stream)


def test_the_sdk_raises_connection_error_when_dropped_before_a_response(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", drop_after=0)

    with pytest.raises(openai.APIConnectionError):
        sdk(fake).chat.completions.create(model="gpt-4o", messages=SDK_ASK)


def test_the_sdk_times_out_on_a_slow_first_byte(fake: FakeUpstream) -> None:
    fake.script("gpt-4o", delay_first_byte=0.5)

    with pytest.raises(openai.APITimeoutError):
        sdk(fake, timeout=0.1).chat.completions.create(model="gpt-4o", messages=SDK_ASK)


ANTHROPIC_TOOL_USE = {"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}
ANTHROPIC_TOOL_RESULT = {"type": "tool_result", "tool_use_id": "t", "content": "x"}
ROUND_TRIP_RESULTS = [
    (
        "/v1/chat/completions",
        [
            {"role": "assistant", "tool_calls": [{
                "id": "call_fake_0", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }]},
            {"role": "tool", "tool_call_id": "call_fake_0", "content": "12C"},
        ],
    ),
    (
        "/anthropic/v1/messages",
        [
            {"role": "assistant", "content": [ANTHROPIC_TOOL_USE]},
            {"role": "user", "content": [ANTHROPIC_TOOL_RESULT]},
        ],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("path", "result"), ROUND_TRIP_RESULTS)
def test_a_tool_round_trip_calls_the_tool_until_its_result_comes_back(
    fake: FakeUpstream, path: str, result: list[dict[str, Any]]
) -> None:
    fake.script("agent", tool_calls=WEATHER_CALLS[:1], tool_round_trip=True, text="It is 12C.")
    ask_body = {"model": "agent", "max_tokens": 50, "messages": ASK}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}

    first = call(fake, ask_body, path, headers=headers).text
    then = call(fake, {**ask_body, "messages": [*ASK, *result]}, path, headers=headers)

    assert "get_weather" in first
    assert "It is 12C." not in first
    assert "It is 12C." in then.text
    assert "get_weather" not in then.text


def test_a_responses_tool_output_ends_the_round_trip(fake: FakeUpstream) -> None:
    fake.script("agent", tool_calls=WEATHER_CALLS[:1], tool_round_trip=True, text="Sunny.")
    output = {"type": "function_call_output", "call_id": "call_fake_0", "output": "12C"}

    first = call(fake, {"model": "agent", "input": "weather?"}, "/v1/responses").json()
    then = call(fake, {"model": "agent", "input": ["weather?", output]}, "/v1/responses")

    assert [item["type"] for item in first["output"]] == ["function_call"]
    assert "Sunny." in then.text
    assert 'function_call"' not in then.text


def test_a_schema_property_named_type_is_no_tool_result(fake: FakeUpstream) -> None:
    fake.script("agent", tool_calls=WEATHER_CALLS[:1], tool_round_trip=True, text="Sunny.")
    schema = {"type": "object", "properties": {"type": {"type": "string"}}}
    tool = {"type": "function", "name": "get_weather", "parameters": schema}

    first = call(fake, {"model": "agent", "input": "weather?", "tools": [tool]}, "/v1/responses")

    assert [item["type"] for item in first.json()["output"]] == ["function_call"]
