"""Calls made with a signed-in member's session instead of a key: served with the CSRF token,
refused without it, on the member's chosen organization or their first one."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
from django.conf import settings
from django.test import Client

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.conftest import make_org, make_user
from tests.gateway.calls import (
    ask,
    error_of,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World

CSRF = "a" * 32


def session_cookie(user: Any, org_id: int | None = None) -> str:
    client = Client()
    client.force_login(user)
    if org_id is not None:
        session = client.session
        session["momor_org_id"] = org_id
        session.save()
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


def session_post(
    world: World, session: str | None, *, csrf: str | None = CSRF, body: Any = None
) -> httpx.Response:
    cookies = {settings.CSRF_COOKIE_NAME: CSRF}
    if session is not None:
        cookies[settings.SESSION_COOKIE_NAME] = session
    headers = {"x-csrftoken": csrf} if csrf else {}
    return httpx.post(
        world.url + "/v1/chat/completions",
        json=body or ask(),
        headers=headers,
        cookies=cookies,
        timeout=30,
    )


def recorded(response: httpx.Response) -> Generation:
    assert drain()
    return Generation.objects.get(request_id=response.headers["x-momor-request-id"])


def test_a_signed_in_member_with_the_csrf_token_is_served(world: World) -> None:
    alice = make_user("alice", world.org)
    response = session_post(world, session_cookie(alice))
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "openai/gpt-5"
    row = recorded(response)
    assert row.user_id == alice.pk
    assert row.organization_id == world.org.pk
    assert row.api_key is None


def test_a_session_call_without_the_csrf_token_is_refused(world: World) -> None:
    alice = make_user("alice", world.org)
    response = session_post(world, session_cookie(alice), csrf=None)
    error_of(response, 401, "invalid_api_key")
    assert world.fake.requests() == []


def test_a_session_call_with_a_wrong_csrf_token_is_refused(world: World) -> None:
    alice = make_user("alice", world.org)
    response = session_post(world, session_cookie(alice), csrf="b" * 32)
    error_of(response, 401, "invalid_api_key")


def test_a_session_that_is_not_signed_in_is_refused(world: World) -> None:
    error_of(session_post(world, "not-a-session"), 401, "invalid_api_key")


def test_a_session_call_runs_on_the_chosen_organization(world: World) -> None:
    globex = make_org("globex", credits=Decimal(100), zdr_hold=True)
    alice = make_user("alice", world.org)
    alice.memberships.create(organization=globex)
    response = session_post(world, session_cookie(alice, globex.pk))
    assert response.status_code == 200
    # globex holds every call to ZDR: Momor's OpenAI key is left out.
    assert response.headers["x-momor-provider"] == "azure@eu"
    assert recorded(response).organization_id == globex.pk


def test_a_session_call_runs_on_the_first_membership_by_default(world: World) -> None:
    globex = make_org("globex", credits=Decimal(100), zdr_hold=True)
    alice = make_user("alice", world.org)
    alice.memberships.create(organization=globex)
    response = session_post(world, session_cookie(alice))
    assert response.status_code == 200
    assert recorded(response).organization_id == world.org.pk


def test_a_session_cannot_choose_an_organization_it_is_not_a_member_of(world: World) -> None:
    globex = make_org("globex")
    alice = make_user("alice", world.org)
    response = session_post(world, session_cookie(alice, globex.pk))
    assert response.status_code == 200
    assert recorded(response).organization_id == world.org.pk


def test_a_bearer_key_wins_over_a_session(world: World) -> None:
    alice = make_user("alice", world.org)
    response = httpx.post(
        world.url + "/v1/chat/completions",
        json=ask(),
        headers={"authorization": "Bearer sk-momor-wrong"},
        cookies={settings.SESSION_COOKIE_NAME: session_cookie(alice)},
    )
    error_of(response, 401, "invalid_api_key")


def test_a_session_call_is_checked_like_a_key_call(world: World) -> None:
    alice = make_user("alice", world.org)
    response = session_post(world, session_cookie(alice), body=ask(provider={"zdr": "no"}))
    error = error_of(response, 400, "invalid_value")
    assert error["message"] == "'provider.zdr' must be a boolean"
