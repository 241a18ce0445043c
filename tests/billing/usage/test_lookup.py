"""`GET /v1/generation?id=` (and `/api/v1/generation`): the whole record of a call, every
attempt and what each cost, for the owning organization's keys and members only."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import Client

from accounts.models import Role
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import a_record
from tests.conftest import make_key, make_org, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def lookup(
    world: World, request_id: str, *, key: str | None = None, path: str = "/v1/generation"
) -> httpx.Response:
    headers = {"authorization": f"Bearer {key or world.key}"}
    return httpx.get(world.url + path, params={"id": request_id}, headers=headers, timeout=10)


def lookup_by_session(world: World, request_id: str, user: Any, org_id: int) -> httpx.Response:
    client = Client()
    client.force_login(user)
    session = client.session
    session["momor_org_id"] = org_id
    session.save()
    cookies = {settings.SESSION_COOKIE_NAME: session.session_key or ""}
    url = world.url + "/v1/generation"
    return httpx.get(url, params={"id": request_id}, cookies=cookies, timeout=10)


def served_with_failover(world: World) -> str:
    world.fake.script("gpt-5", fail={"status": 503})
    world.fake.script(
        "gpt-5-azure-eu",
        text="Paris.",
        usage={
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "completion_tokens_details": {"reasoning_tokens": 30},
        },
    )
    response = world.post({"model": "openai/gpt-5", "messages": HI})
    assert response.status_code == 200, response.text
    return response.headers["x-momor-request-id"]


def wait_for_record(world: World, request_id: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    while True:
        found = lookup(world, request_id)
        if found.status_code == 200 or time.monotonic() - started > 5:
            return found, time.monotonic() - started
        time.sleep(0.02)


def test_the_record_appears_within_a_second_with_every_attempt_and_its_cost(
    world: World,
) -> None:
    request_id = served_with_failover(world)

    found, waited = wait_for_record(world, request_id)

    assert found.status_code == 200, found.text
    assert waited < 1.0
    data = found.json()["data"]
    timings = {k: data.pop(k) for k in ("created_at", "latency_ms", "first_token_ms")}
    assert isinstance(timings["latency_ms"], int) and timings["latency_ms"] >= 0
    assert timings["first_token_ms"] is None  # not streamed
    attempts = data.pop("attempts")
    assert data == {
        "id": request_id,
        "api": "chat",
        "model": "openai/gpt-5",
        "provider": "azure@eu",
        "selectors": ["openai/gpt-5"],
        "streamed": False,
        "status": "success",
        "http_status": 200,
        "error": None,
        "finish_reason": "stop",
        "native_finish_reason": "stop",
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "total_tokens": 1100,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 30},
            "estimated": False,
        },
        "cost": "0.002300000",
        "charge_capped": False,
        "prices": {
            "prompt": "1.300000",
            "completion": "10.000000",
            "cache_read": "0.000000",
            "cache_write": "0.000000",
        },
        "request_id": None,
        "session_id": None,
        "app": None,
        "referer": None,
        "routing": {},
    }
    assert [
        (a["position"], a["provider"], a["region"], a["key"], a["http_status"], a["cost"])
        for a in attempts
    ] == [
        (0, "openai", None, "momor", 503, "0.000000000"),
        (1, "azure", "eu", "momor", 200, "0.002300000"),
    ]
    assert attempts[0]["error"]
    assert attempts[1]["upstream_id"] == "gpt-5-azure-eu"
    assert (attempts[1]["prompt_tokens"], attempts[1]["completion_tokens"]) == (1000, 100)
    assert attempts[1]["prices"]["prompt"] == "1.300000"


def test_a_streamed_call_shows_its_first_token_and_streamed(world: World) -> None:
    world.fake.script(
        "gpt-5-mini", text="a b c", usage={"prompt_tokens": 5, "completion_tokens": 3}
    )
    response = world.stream({"model": "openai/gpt-5-mini", "messages": HI})

    found, _ = wait_for_record(world, response.headers["x-momor-request-id"])

    data = found.json()["data"]
    assert data["streamed"] is True
    assert isinstance(data["first_token_ms"], int)
    assert data["first_token_ms"] <= data["latency_ms"]
    assert data["cost"] == "0.000007250"  # 5 x 0.25 + 3 x 2 per million


def test_the_api_v1_alias_answers_the_same(world: World) -> None:
    request_id = served_with_failover(world)
    found, _ = wait_for_record(world, request_id)

    alias = lookup(world, request_id, path="/api/v1/generation")

    assert alias.status_code == 200
    assert alias.json() == found.json()


def test_another_key_and_members_of_the_organization_see_it(world: World) -> None:
    request_id = served_with_failover(world)
    wait_for_record(world, request_id)
    other_key, _ = make_key(world.org, name="second")
    bob = make_user("bob", world.org, Role.MEMBER)

    by_key = lookup(world, request_id, key=other_key)
    by_member = lookup_by_session(world, request_id, bob, world.org.pk)

    assert by_key.status_code == 200
    assert by_member.status_code == 200, by_member.text
    assert by_key.json() == by_member.json()


def test_another_organization_gets_404_as_if_it_did_not_exist(world: World) -> None:
    request_id = served_with_failover(world)
    wait_for_record(world, request_id)
    globex = make_org("globex")
    outsider_key, _ = make_key(globex, name="outsider")
    mallory = make_user("mallory", globex, Role.OWNER)

    by_key = lookup(world, request_id, key=outsider_key)
    by_session = lookup_by_session(world, request_id, mallory, globex.pk)
    unknown = lookup(world, "0" * 32, key=outsider_key)

    assert by_key.status_code == by_session.status_code == 404
    message = by_key.json()["error"]["message"]
    assert by_session.json()["error"]["message"] == message
    assert unknown.json()["error"]["message"] == message.replace(request_id, "0" * 32)


def test_an_unknown_id_gets_404_saying_it_is_not_recorded_yet(world: World) -> None:
    response = lookup(world, "f" * 32)

    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "message": f"No generation {'f' * 32} is recorded for this organization (yet: a "
            "call's record is written within a second of its end).",
            "type": "invalid_request_error",
            "param": None,
            "code": "generation_not_found",
        }
    }


def test_a_lookup_without_a_key_or_an_id_is_refused(world: World) -> None:
    anonymous = httpx.get(world.url + "/v1/generation", params={"id": "x"}, timeout=10)
    without_id = httpx.get(
        world.url + "/v1/generation", headers={"authorization": f"Bearer {world.key}"}, timeout=10
    )

    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "invalid_api_key"
    assert without_id.status_code == 400


def test_a_call_of_another_api_says_which(world: World) -> None:
    """A record handed off through the real record path, as the Messages route hands its
    calls off, reads back with its API."""
    record = a_record(world.org.pk, api="messages", model="anthropic/claude-sonnet-4")
    asyncio.run(record_call(record))
    assert drain()

    found = lookup(world, record.request_id)

    assert found.status_code == 200, found.text
    assert found.json()["data"]["api"] == "messages"
