"""Failover of plain calls: what moves to the next candidate, what the provider answers at once,
and the answer when every candidate failed."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from gateway.models import Provider
from tests.gateway.calls import (
    ask,
    error_of,
    save_key,
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import World, model, offer

# Both upstream clients relay and fail over alike.
pytestmark = pytest.mark.usefixtures("upstream_client")

OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def unreachable(*names: str) -> None:
    for name in names:
        row = Provider.objects.get(name=name)
        row.base_url = closed_port_url()
        row.save()  # save(), not update(): the catalog notices changes by updated_at
        for region in row.regions.all():
            region.base_url = closed_port_url()
            region.save()
    settle()


def served(world: World, body: dict[str, Any]) -> str:
    response = world.post(body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Hello from the fake upstream."
    return response.headers["x-momor-provider"]


def local_only(world: World) -> None:
    """meta/llama-local, served by the `local` provider on acme's own key alone."""
    row = model("meta/llama-local")
    offer(row, Provider.objects.get(name="local"), "llama-local", "0", "0")
    save_key(world.org, "local", "acme-local-key")
    settle()


# What moves on


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529, 408, 429, 401, 403])
def test_a_failure_moves_to_the_next_candidate(world: World, status: int) -> None:
    world.fake.script(OPENAI, fail={"status": status})
    assert served(world, ask()) == "azure@eu"
    assert tried(world.fake) == [OPENAI, AZURE_EU]


def test_a_connection_error_moves_to_the_next_candidate(world: World) -> None:
    unreachable("openai")
    assert served(world, ask()) == "azure@eu"
    assert tried(world.fake) == [AZURE_EU]


def test_a_dropped_connection_moves_to_the_next_candidate(world: World) -> None:
    world.fake.script(OPENAI, drop_after=0)
    assert served(world, ask()) == "azure@eu"


def test_an_unreadable_answer_moves_to_the_next_candidate(world: World) -> None:
    world.fake.script(OPENAI, response={"not": "a completion"})
    assert served(world, ask()) == "azure@eu"


def test_a_slow_first_byte_moves_to_the_next_candidate(
    world: World, settings: SettingsWrapper
) -> None:
    settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT = 0.3
    world.fake.script(OPENAI, delay_first_byte=3)
    assert served(world, ask()) == "azure@eu"


@pytest.mark.parametrize("status", [400, 404, 409, 413, 422])
def test_a_4xx_in_another_shape_moves_to_the_next_candidate(world: World, status: int) -> None:
    world.fake.script(OPENAI, fail={"status": status, "body": "<html>nope</html>"})
    assert served(world, ask()) == "azure@eu"


def test_a_4xx_whose_error_has_no_message_moves_on(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 400, "body": {"detail": "bad"}})
    assert served(world, ask()) == "azure@eu"


def test_the_next_model_serves_when_a_model_has_no_offering_left(world: World) -> None:
    for upstream_id in (OPENAI, AZURE_EU, AZURE):
        world.fake.script(upstream_id, fail={"status": 503})
    response = world.post(ask(models=["openai/gpt-5-mini"]))
    assert response.status_code == 200
    assert response.json()["model"] == "openai/gpt-5-mini"
    assert tried(world.fake) == [OPENAI, AZURE_EU, AZURE, "gpt-5-mini"]


def test_each_offering_is_tried_once(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503})
    world.post(ask(models=["openai/gpt-5", "tier/high", "auto"]))
    assert tried(world.fake) == [OPENAI, AZURE_EU]


def test_a_saved_key_refused_falls_back_to_momor_key_on_the_same_offering(world: World) -> None:
    save_key(world.org, "openai", "acme-openai-key")
    settle()
    world.fake.script(OPENAI, fail={"status": 401}, fail_times=1)
    assert served(world, ask()) == "openai"
    assert [r["headers"]["authorization"] for r in world.fake.requests()] == [
        "Bearer acme-openai-key",
        "Bearer momor-upstream-secret-0001",
    ]


# What the provider answers at once


PROVIDER_ERROR = {
    "error": {
        "message": "Invalid value for 'temperature': must be at most 2.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "invalid_value",
    }
}


@pytest.mark.parametrize("status", [400, 404, 413, 422])
def test_a_request_error_in_openai_shape_comes_back_at_once(world: World, status: int) -> None:
    world.fake.script(OPENAI, fail={"status": status, "body": PROVIDER_ERROR})
    response = world.post(ask(temperature=9))
    assert response.status_code == status
    assert response.json() == PROVIDER_ERROR
    assert tried(world.fake) == [OPENAI]


def test_the_fake_openai_own_400_comes_back_at_once(world: World) -> None:
    response = world.post({"model": "openai/gpt-5", "messages": []})
    error = error_of(response, 400, "empty_array")
    assert error["param"] == "messages"
    assert error["type"] == "invalid_request_error"
    assert tried(world.fake) == [OPENAI]


# When every candidate failed


def test_every_candidate_unreachable_answers_503(world: World) -> None:
    unreachable("openai", "azure")
    error = error_of(world.post(ask()), 503, "providers_unavailable")
    assert error["type"] == "server_error"
    assert error["param"] is None


def test_every_candidate_timing_out_answers_503(world: World, settings: SettingsWrapper) -> None:
    settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT = 0.2
    for upstream_id in (OPENAI, AZURE_EU, AZURE):
        world.fake.script(upstream_id, delay_first_byte=2)
    error_of(world.post(ask()), 503, "providers_unavailable")


def test_a_last_openai_shaped_error_gives_its_status_and_fields(world: World) -> None:
    body = {
        "error": {
            "message": "Overloaded.",
            "type": "overloaded_error",
            "param": None,
            "code": "busy",
        }
    }
    for upstream_id in (OPENAI, AZURE_EU, AZURE):
        world.fake.script(upstream_id, fail={"status": 429 if upstream_id != AZURE else 503})
    world.fake.script(AZURE, fail={"status": 529, "body": body})
    response = world.post(ask())
    assert response.status_code == 529
    assert response.json() == body
    assert tried(world.fake) == [OPENAI, AZURE_EU, AZURE]


def test_a_last_5xx_in_another_shape_gives_its_status_as_server_error(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503})
    world.fake.script(AZURE_EU, fail={"status": 503})
    world.fake.script(AZURE, fail={"status": 502, "body": "Bad gateway"})
    error = error_of(world.post(ask()), 502, None)
    assert error["type"] == "server_error"
    assert error["param"] is None


def test_the_answer_follows_the_last_candidate_not_the_first(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 502, "body": "Bad gateway"})
    unreachable("azure")
    error_of(world.post(ask()), 503, "providers_unavailable")


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_own_key_last_answers_502_naming_the_provider(world: World, status: int) -> None:
    local_only(world)
    world.fake.script("llama-local", fail={"status": status})
    error = error_of(world.post(ask("meta/llama-local")), 502, None)
    assert "local" in error["message"]
    assert error["param"] is None


def test_a_limited_own_key_last_answers_429_naming_the_provider(world: World) -> None:
    local_only(world)
    world.fake.script("llama-local", fail={"status": 429})
    error = error_of(world.post(ask("meta/llama-local")), 429, "rate_limit_exceeded")
    assert "local" in error["message"]


def test_a_limited_momor_key_last_gives_the_provider_answer(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 429})
    response = world.post(ask("openai/gpt-5-mini"))
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_every_failure_is_an_openai_error_object(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 500, "body": "boom"})
    error = error_of(world.post(ask("openai/gpt-5-mini")), 500, None)
    assert error["type"] == "server_error"
