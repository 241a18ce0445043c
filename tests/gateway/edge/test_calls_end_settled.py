"""Every call ends recorded and settled: whatever goes wrong once the caller is known (a value
Momor cannot read, a translation that cannot carry a field, a provider answer or stream that
cannot be read, a failure inside Momor, a client gone at any point, admission included), the
call gets an OpenAI-shaped answer, exactly one record with the right status, and no
reservation is left open to be held until it expires."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from datetime import date
from typing import Any

import httpx
import orjson
import pytest
from django.conf import settings as django_settings

from billing.admission import store
from billing.admission.select import local_store
from billing.models import Attempt, Generation
from billing.recording.hand_off import drain
from gateway.providers import REGISTRY, register
from gateway.providers.contract import StreamTranslator
from gateway.providers.openai import OpenAIAdapter
from tests.conftest import make_user
from tests.gateway.calls import (
    ask,
    error_of,
    events,
    settle,
    settled_world,  # noqa: F401 - autouse
    streamed_text,
    wait_recorded,
)
from tests.gateway.conftest import World, model, offer, provider
from tests.gateway.edge.test_session_calls import CSRF, session_cookie, session_post
from tests.tcp_delay import DelayingProxy

SONNET = "claude-sonnet-4-5-20250929"
FLASH = "gemini-2.5-flash"
DEFAULT_TEXT = "Hello from the fake upstream."


def settled_once(response: httpx.Response, status: str, http_status: int) -> Generation:
    """The call's one record, with this status, and no reservation of its organization open."""
    assert drain()
    request_id = response.headers["x-momor-request-id"]
    rows = Generation.objects.filter(request_id=request_id)
    assert rows.count() == 1
    row = rows.get()
    assert (row.status, row.http_status) == (status, http_status), row.error
    assert_no_reservation_open(row.organization_id)
    return row


def assert_no_reservation_open(org_id: int) -> None:
    now_ms = int(time.time() * 1000)
    assert store().open_reservations(org_id, now_ms) == {}
    assert local_store().open_reservations(org_id, now_ms) == {}


def attempts(row: Generation) -> list[tuple[str, int | None]]:
    found = Attempt.objects.filter(generation=row).order_by("position")
    return [(a.provider + (f"@{a.region}" if a.region else ""), a.http_status) for a in found]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def chunk_line(content: bytes) -> bytes:
    """One Chat Completions stream event whose content is these raw bytes."""
    head = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-5",'
    return head + b'"choices":[{"index":0,"delta":{"content":"' + content + b'"}}]}\n\n'


@pytest.fixture
def translated(world: World) -> World:
    """Claude Sonnet on the fake's Anthropic API and Gemini 2.5 Flash on its Gemini API."""
    claude = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    offer(model("anthropic/claude-sonnet-4-5", released=date(2025, 9, 29)), claude, SONNET,
          "3", "15")  # fmt: skip
    google = provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    offer(model("google/gemini-2.5-flash"), google, FLASH, "0.30", "2.50", json_schema=True)
    settle()
    return world


# Values Momor cannot read


def test_a_body_nested_deeper_than_momor_can_send_is_refused_and_recorded(world: World) -> None:
    deep = b"[" * 1000 + b"]" * 1000  # Python's own json module cannot write it either
    raw = orjson.dumps(ask(metadata="DEEP")).replace(b'"DEEP"', deep)
    response = httpx.post(
        world.url + "/v1/chat/completions",
        content=raw,
        headers={"authorization": f"Bearer {world.key}", "content-type": "application/json"},
    )
    error = error_of(response, 400, "invalid_value")
    assert "more than 254 levels deep" in error["message"]
    settled_once(response, "refused", 400)
    assert world.fake.requests() == []


def test_a_max_age_beyond_the_calendar_is_refused_naming_the_field(world: World) -> None:
    response = world.post(ask("tier/high", provider={"maxAge": "P9999999Y"}))
    error = error_of(response, 400, "invalid_value")
    assert "'provider.maxAge'" in error["message"]
    settled_once(response, "refused", 400)


# Fields a translation cannot read


@pytest.mark.parametrize("tier", [[], ["priority"], {"tier": "priority"}])
def test_a_service_tier_anthropic_cannot_read_is_left_off(translated: World, tier: Any) -> None:
    response = translated.post(ask("anthropic/claude-sonnet-4-5", service_tier=tier))
    assert response.status_code == 200, response.text
    assert "service_tier" not in translated.fake.requests(SONNET)[0]["body"]
    settled_once(response, "success", 200)


@pytest.mark.parametrize(
    ("field", "named"),
    [
        ({"stop": 5}, "'stop' must be a list"),
        ({"response_format": {"type": "json_schema", "json_schema": "x"}},
         "'response_format.json_schema' must be an object"),
    ],
)  # fmt: skip
def test_a_field_gemini_cannot_carry_fails_that_offering_cleanly(
    translated: World, field: dict[str, Any], named: str
) -> None:
    response = translated.post(ask("google/gemini-2.5-flash", **field))
    error = error_of(response, 422, "unsupported_parameter")
    assert named in error["message"]
    row = settled_once(response, "failed", 422)
    assert attempts(row) == [("gemini", None)]
    assert translated.fake.requests(FLASH) == []


def test_a_field_one_offering_cannot_carry_moves_the_call_on(translated: World) -> None:
    response = translated.post(ask(["google/gemini-2.5-flash", "openai/gpt-5"], stop=5))
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "openai/gpt-5"
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("gemini", None), ("openai", 200)]


# Provider answers that cannot be read


def test_a_stream_line_that_is_not_json_before_output_fails_over(world: World) -> None:
    world.fake.script("gpt-5", inject={"after": 0, "data": b64(b"data: {not json\n\n")})
    response = world.stream(ask())
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "azure@eu"
    chunks = events(response.text)
    assert streamed_text(chunks) == DEFAULT_TEXT
    assert chunks[-1] == "[DONE]"
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("openai", 502), ("azure@eu", 200)]


def test_a_stream_line_that_is_not_json_after_output_ends_on_one_error_chunk(
    world: World,
) -> None:
    world.fake.script("gpt-5", inject={"after": 2, "data": b64(b"data: {not json\n\n")})
    response = world.stream(ask())
    chunks = events(response.text)
    assert "[DONE]" not in chunks
    assert streamed_text(chunks[:-1]) == "Hello from"
    last = chunks[-1]
    assert last["error"] == {
        "code": 502,
        "message": "The provider sent a stream event that cannot be read.",
    }
    assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    assert [c for c in chunks if "error" in c] == [last]
    row = settled_once(response, "failed", 200)
    assert row.finish_reason == "error"
    assert attempts(row) == [("openai", 502)]


def test_invalid_utf8_in_a_streamed_chunk_is_relayed_as_replacement_characters(
    world: World,
) -> None:
    world.fake.script("gpt-5", inject={"after": 1, "data": b64(chunk_line(b"caf\xc3("))})
    response = world.stream(ask())
    chunks = events(response.text)
    assert streamed_text(chunks) == "Hellocaf\ufffd( from the fake upstream."
    assert chunks[-1] == "[DONE]"
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("openai", 200)]


def test_invalid_utf8_in_a_plain_answer_is_relayed_as_replacement_characters(
    world: World,
) -> None:
    answer = orjson.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-5",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "caf\u00e9"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    ).replace("caf\u00e9".encode(), b"caf\xe9")
    world.fake.script("gpt-5", raw_body=b64(answer))
    response = world.post(ask())
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "caf\ufffd"
    settled_once(response, "success", 200)


@pytest.mark.parametrize(
    "script",
    [
        {"raw_body": b64(b"<html>Bad gateway</html>")},
        {"response": {"choices": "none"}},
    ],
    ids=["not-json", "choices-not-a-list"],
)
def test_a_plain_answer_that_cannot_be_read_fails_over(
    world: World, script: dict[str, Any]
) -> None:
    world.fake.script("gpt-5", **script)
    response = world.post(ask())
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "azure@eu"
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("openai", 502), ("azure@eu", 200)]


def test_usage_details_of_another_shape_are_read_as_no_counts_and_the_answer_served(
    world: World,
) -> None:
    """Usage is read within bounds (gateway/providers/contract.py, token_count): a details
    field that is not an object holds no count, so the tokens the provider served are billed
    on the counts it did report, rather than failing over to generate them again."""
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": "x"}
    world.fake.script("gpt-5", usage=usage)
    response = world.post(ask())
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    answered = response.json()["usage"]
    assert (answered["prompt_tokens"], answered["completion_tokens"]) == (3, 2)
    assert answered["prompt_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("openai", 200)]


def test_a_stream_whose_choices_cannot_be_read_fails_over(world: World) -> None:
    bad = b'data: {"choices":[{"index":0,"delta":["x"]}]}\n\n'
    world.fake.script("gpt-5", inject={"after": 0, "data": b64(bad)})
    response = world.stream(ask())
    assert response.headers["x-momor-provider"] == "azure@eu"
    row = settled_once(response, "success", 200)
    assert attempts(row) == [("openai", 502), ("azure@eu", 200)]


def test_a_status_a_provider_writes_in_its_error_body_is_never_the_calls(
    translated: World,
) -> None:
    error = b'data: {"error": {"code": 9999, "message": "odd", "status": "INTERNAL"}}\n\n'
    translated.fake.script(FLASH, inject={"after": 0, "data": b64(error)})
    response = translated.stream(ask("google/gemini-2.5-flash"))
    assert error_of(response, 502, "INTERNAL")["message"] == "odd"
    row = settled_once(response, "failed", 502)
    assert attempts(row) == [("gemini", None)]


# A failure inside Momor


class BrokenStreams(OpenAIAdapter):
    """A wire protocol whose stream translator fails to be made: a fault of Momor's own."""

    api = "broken"

    def stream(self) -> StreamTranslator:
        raise RuntimeError("no translator")


@pytest.fixture
def broken(world: World) -> Iterator[World]:
    register("broken", BrokenStreams())
    offer(model("acme/broken"), provider("broken", "broken", f"{world.fake.url}/v1"),
          "gpt-5", "1", "2")  # fmt: skip
    settle()
    yield world
    REGISTRY.pop("broken")


def test_a_failure_inside_momor_is_a_500_that_is_recorded_and_settled(broken: World) -> None:
    response = broken.stream(ask("acme/broken"))
    error = error_of(response, 500, None)
    assert error["type"] == "server_error"
    row = settled_once(response, "failed", 500)
    assert "RuntimeError" in row.error


def test_a_failure_inside_momor_on_a_session_call_is_recorded_and_settled(
    broken: World,
) -> None:
    alice = make_user("alice", broken.org)
    response = session_post(broken, session_cookie(alice), body=ask("acme/broken", stream=True))
    error_of(response, 500, None)
    settled_once(response, "failed", 500)


# A client that goes away


@pytest.fixture
def slow_redis(world: World, settings: Any) -> Iterator[DelayingProxy]:
    """Admission's Redis behind a proxy that can hold back Redis's replies."""
    from billing.admission import select

    with DelayingProxy(settings.REDIS_URL) as proxy:
        settings.REDIS_URL = proxy.url
        select.store.cache_clear()
        yield proxy
        proxy.delay = 0
    select.store.cache_clear()


def test_a_client_gone_during_admission_leaves_no_reservation(
    world: World, slow_redis: DelayingProxy
) -> None:
    assert world.post(ask()).status_code == 200  # the balance is loaded: the next admits at once
    slow_redis.delay = 1.0
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            world.url + "/v1/chat/completions",
            json=ask(),
            headers={"authorization": f"Bearer {world.key}"},
            timeout=0.3,
        )
    slow_redis.delay = 0
    row = wait_for_cancelled(world)
    assert row.status == "cancelled"
    assert world.fake.requests("gpt-5")[1:] == []
    assert_no_reservation_open(world.org.pk)


def wait_for_cancelled(world: World) -> Generation:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert drain()
        found = Generation.objects.filter(organization=world.org, status="cancelled")
        if found.exists():
            assert found.count() == 1
            return found.get()
        time.sleep(0.05)
    raise AssertionError("the call of the client that went away was never recorded")


def test_a_session_client_gone_mid_stream_is_recorded_once_and_settled(world: World) -> None:
    alice = make_user("alice", world.org)
    world.fake.script("gpt-5", text=" ".join(["w"] * 40), chunk_delay=0.1)
    cookies = {
        django_settings.CSRF_COOKIE_NAME: CSRF,
        django_settings.SESSION_COOKIE_NAME: session_cookie(alice),
    }
    with httpx.stream(
        "POST", world.url + "/v1/chat/completions", json=ask(stream=True),
        headers={"x-csrftoken": CSRF}, cookies=cookies, timeout=10,
    ) as response:  # fmt: skip
        assert response.status_code == 200
        request_id = response.headers["x-momor-request-id"]
        next(response.iter_lines())
    wait_recorded(request_id)
    assert drain()
    rows = Generation.objects.filter(request_id=request_id)
    assert [row.status for row in rows] == ["cancelled"]
    assert_no_reservation_open(world.org.pk)


def test_a_client_gone_before_the_first_byte_leaves_no_reservation(world: World) -> None:
    world.fake.script("gpt-5", delay_first_byte=1.5)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            world.url + "/v1/chat/completions",
            json=ask(stream=True),
            headers={"authorization": f"Bearer {world.key}"},
            timeout=0.4,
        )
    row = wait_for_cancelled(world)
    wait_recorded(row.request_id)
    assert_no_reservation_open(world.org.pk)
