"""What a call says about itself, over real HTTP: its X-Request-Id (echoed, recorded, unique
per organization), its session (sticky routing), the app calling (X-Title, HTTP-Referer), and
the rate-limit headers every answer after the key check carries."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.conftest import make_key
from tests.gateway.calls import (
    ask,
    error_of,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import World
from tests.rate_window import fresh_rate_window

OPENAI, AZURE_EU = "gpt-5", "gpt-5-azure-eu"


def generation(response: httpx.Response) -> Generation:
    assert drain()
    return Generation.objects.get(request_id=response.headers["x-momor-request-id"])


# Rate-limit headers


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (ask(), {}, 200),
        (ask(stream=True), {}, 200),
        (ask("nope/nothing"), {}, 404),
        (ask(provider={"sort": "fastest"}), {}, 400),
        (ask(), {"x-title": "t" * 257}, 400),
    ],
)
def test_every_answer_after_the_key_carries_the_default_rate_limit(
    world: World, body: dict[str, Any], headers: dict[str, str], status: int
) -> None:
    response = world.post(body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["x-ratelimit-limit"] == "600"
    assert 0 <= int(response.headers["x-ratelimit-remaining"]) < 600
    assert int(response.headers["x-ratelimit-reset"]) % 60 == 0


def test_a_refusal_before_the_key_carries_no_rate_limit(world: World) -> None:
    response = world.post(ask(), key="mo-not-a-key")
    error_of(response, 401, "invalid_api_key")
    assert "x-ratelimit-limit" not in response.headers


# X-Request-Id


def test_the_request_id_is_echoed_and_recorded(world: World) -> None:
    response = world.post(ask(), headers={"x-request-id": "trace-0001"})
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "trace-0001"
    assert generation(response).client_request_id == "trace-0001"


def test_a_reused_request_id_is_refused_naming_it(world: World) -> None:
    assert world.post(ask(), headers={"x-request-id": "trace-0002"}).status_code == 200
    again = world.post(ask(stream=True), headers={"x-request-id": "trace-0002"})
    error = error_of(again, 400, "invalid_value")
    assert "trace-0002" in error["message"]
    assert again.headers["x-ratelimit-limit"] == "600"
    assert tried(world.fake) == [OPENAI]
    assert generation(again).client_request_id == ""


def test_request_ids_are_unique_per_organization(world: World) -> None:
    from tests.conftest import make_org

    other = make_org("globex", credits=world.org.balance)
    other_key, _ = make_key(other, name="globex")
    assert world.post(ask(), headers={"x-request-id": "shared-id"}).status_code == 200
    again = world.post(ask(), key=other_key, headers={"x-request-id": "shared-id"})
    assert again.status_code == 200


@pytest.mark.parametrize("value", ["", "r" * 129])
def test_a_request_id_out_of_bounds_is_refused(world: World, value: str) -> None:
    error = error_of(world.post(ask(), headers={"x-request-id": value}), 400, "invalid_value")
    assert "X-Request-Id" in error["message"]


def test_a_rate_limit_refusal_comes_first_and_claims_nothing(world: World) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="limited", rate_limit=1)
    assert world.post(ask(), key=key).status_code == 200
    refused = world.post(ask(), key=key, headers={"x-request-id": "after-limit"})
    error_of(refused, 429, "rate_limit_exceeded")
    assert generation(refused).client_request_id == ""
    assert world.post(ask(), headers={"x-request-id": "after-limit"}).status_code == 200


def test_a_refused_route_still_claims_its_request_id(world: World) -> None:
    error_of(world.post(ask("nope/nothing"), headers={"x-request-id": "r-404"}), 404,
             "model_not_found")  # fmt: skip
    error_of(world.post(ask(), headers={"x-request-id": "r-404"}), 400, "invalid_value")


# Sessions


def test_a_session_stays_on_the_offering_that_served_it(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    first = world.post(ask(), headers={"x-session-id": "s-1"})
    assert first.status_code == 200
    assert tried(world.fake) == [OPENAI, AZURE_EU]
    world.fake.reset()
    again = world.post(ask(stream=True), headers={"x-session-id": "s-1"})
    assert again.status_code == 200
    assert again.headers["x-momor-provider"] == "azure@eu"
    assert tried(world.fake) == [AZURE_EU]
    assert generation(again).session_id == "s-1"
    world.fake.reset()
    assert world.post(ask(), headers={"x-session-id": "s-2"}).headers["x-momor-provider"] == (
        "openai"
    )


def test_a_session_moves_when_its_offering_fails(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    assert world.post(ask(session_id="s-3")).headers["x-momor-provider"] == "azure@eu"
    world.fake.reset()
    world.fake.script(AZURE_EU, fail={"status": 503}, fail_times=1)
    moved = world.post(ask(session_id="s-3"))
    assert moved.headers["x-momor-provider"] == "openai"
    assert tried(world.fake) == [AZURE_EU, OPENAI]
    world.fake.reset()
    assert world.post(ask(session_id="s-3")).headers["x-momor-provider"] == "openai"


def test_a_session_is_left_when_its_offering_no_longer_passes_the_filters(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    assert world.post(ask(session_id="s-4")).headers["x-momor-provider"] == "azure@eu"
    body = ask(session_id="s-4", provider={"ignore": ["azure@eu"]})
    assert world.post(body).headers["x-momor-provider"] == "openai"


def test_the_body_session_wins_and_is_not_forwarded(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    world.post(ask(session_id="body-s"), headers={"x-session-id": "header-s"})
    assert all("session_id" not in r["body"] for r in world.fake.requests())
    world.fake.reset()
    assert (
        world.post(ask(), headers={"x-session-id": "header-s"}).headers["x-momor-provider"]
        == "openai"
    )
    world.fake.reset()
    sticky = world.post(ask(), headers={"x-session-id": "body-s"})
    assert sticky.headers["x-momor-provider"] == "azure@eu"


@pytest.mark.parametrize("value", ["", "s" * 257, 7, ["a"]])
def test_an_unreadable_session_id_is_refused(world: World, value: object) -> None:
    error = error_of(world.post(ask(session_id=value)), 400, "invalid_value")
    assert "session_id" in error["message"]


def test_a_long_session_header_is_refused(world: World) -> None:
    error = error_of(world.post(ask(), headers={"x-session-id": "s" * 257}), 400, "invalid_value")
    assert "X-Session-Id" in error["message"]


# The calling app


def test_the_title_names_the_app_and_the_referer_is_kept(world: World) -> None:
    headers = {"x-title": "Crème Notes".encode(), "http-referer": b"https://notes.example/app"}
    row = generation(world.post(ask(), headers=headers))
    assert (row.app, row.referer) == ("Crème Notes", "https://notes.example/app")


def test_the_referer_names_the_app_without_a_title(world: World) -> None:
    row = generation(world.post(ask(), headers={"http-referer": "https://a.example/"}))
    assert (row.app, row.referer) == ("https://a.example/", "https://a.example/")


@pytest.mark.parametrize(("name", "length"), [("http-referer", 2049), ("x-title", 257)])
def test_an_app_header_too_long_is_refused(world: World, name: str, length: int) -> None:
    error_of(world.post(ask(), headers={name: "a" * length}), 400, "invalid_value")


def test_generations_filter_by_session_and_app(world: World) -> None:
    from tests.conftest import make_key as key_of

    management, _ = key_of(world.org, name="mgmt", kind="management")
    world.post(ask(), headers={"x-session-id": "s-9", "x-title": "One"})
    world.post(ask(), headers={"x-title": "Two"})
    assert drain()
    url = world.url + "/api/manage/generations/"
    auth = {"authorization": f"Bearer {management}"}
    by_session = httpx.get(url, params={"session": "s-9"}, headers=auth).json()["results"]
    by_app = httpx.get(url, params={"app": "Two"}, headers=auth).json()["results"]
    assert [(g["session_id"], g["app"]) for g in by_session] == [("s-9", "One")]
    assert [(g["session_id"], g["app"]) for g in by_app] == [(None, "Two")]


def test_while_redis_is_down_this_process_remembers_ids_and_sessions(
    world: World, settings: Any
) -> None:
    from billing.admission import select

    settings.REDIS_URL = "redis://127.0.0.1:9/0"
    select.store.cache_clear()
    assert world.post(ask(), headers={"x-request-id": "offline-1"}).status_code == 200
    error_of(world.post(ask(), headers={"x-request-id": "offline-1"}), 400, "invalid_value")
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    assert world.post(ask(session_id="offline-s")).headers["x-momor-provider"] == "azure@eu"
    assert world.post(ask(session_id="offline-s")).headers["x-momor-provider"] == "azure@eu"
