"""The fake upstream's Responses API over real HTTP, with the official openai SDK as its client:
the plain Response and the streamed events as OpenAI writes them, scripted text, reasoning,
function calls and usage, the scripted failures as for chat (OpenAI's `error` and
`response.failed` mid-stream), and the 400s OpenAI answers what Momor must never send."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest

from testkit.fake_responses import ENCRYPTED
from tests.fake_upstream_fixture import FakeUpstream


def client(fake: FakeUpstream, path: str = "/v1") -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + path, api_key="sk-test", max_retries=0)


def test_a_plain_response_holds_each_item_and_the_usage(fake: FakeUpstream) -> None:
    fake.script(
        "gpt-5", text="a b", reasoning="r", tool_calls=[{"id": "c1", "name": "f"}],
        usage={"input_tokens": 9},
    )  # fmt: skip
    answer = client(fake).responses.create(
        model="gpt-5", input="one two three", include=["reasoning.encrypted_content"]
    )
    assert [item.type for item in answer.output] == ["reasoning", "message", "function_call"]
    assert getattr(answer.output[0], "encrypted_content", None) == ENCRYPTED
    assert answer.output_text == "a b"
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (9, 1 + 2 + 2)


def test_a_stream_is_numbered_and_the_sdk_rebuilds_the_response(fake: FakeUpstream) -> None:
    fake.script("gpt-5", text="x y z")
    with client(fake, "/azure/openai/v1").responses.stream(model="gpt-5", input="q") as stream:
        numbers = [event.sequence_number for event in stream]
        final = stream.get_final_response()
    assert numbers == list(range(len(numbers)))
    assert final.output_text == "x y z"
    assert fake.requests("gpt-5")[0]["path"] == "/azure/openai/v1/responses"


def test_a_stream_error_is_openai_s_error_then_response_failed(fake: FakeUpstream) -> None:
    fake.script("gpt-5", text="x y z", stream_error_after=3)
    body = {"model": "gpt-5", "input": "q", "stream": True}
    text = httpx.post(fake.url + "/v1/responses", json=body, trust_env=False).text
    events = [orjson.loads(b.split("data: ", 1)[1]) for b in text.split("\n\n") if b]
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["response"]["status"] == "failed"


def test_a_scripted_failure_is_openai_s_error_object(fake: FakeUpstream) -> None:
    fake.script("gpt-5", fail={"status": 429})
    with pytest.raises(openai.RateLimitError):
        client(fake).responses.create(model="gpt-5", input="q")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_not_found"),
        ({"input": [{"type": "reasoning", "summary": [], "encrypted_content": "momor:e30="}]},
         "invalid_encrypted_content"),
    ],
)  # fmt: skip
def test_it_refuses_what_openai_refuses_with_store_off(
    fake: FakeUpstream, body: dict[str, object], code: str
) -> None:
    response = httpx.post(
        fake.url + "/v1/responses", json={"model": "gpt-5", "input": "q", **body}, trust_env=False
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
