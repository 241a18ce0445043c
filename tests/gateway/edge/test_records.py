"""Every call past the key check leaves exactly one Generation with its Attempts: served,
failed after routing, refused, streamed and broken, cancelled."""

from __future__ import annotations

import csv
import io

import httpx
import pytest
from django.test import Client

from accounts.models import Role
from billing.models import Attempt, Generation
from billing.recording.hand_off import drain
from tests.conftest import make_user
from tests.gateway.calls import (
    ask,
    save_key,
    settle,
    settled_world,  # noqa: F401 - autouse
    wait_recorded,
)
from tests.gateway.conftest import World
from tests.ui_helpers import streamed


def generation(response: httpx.Response) -> Generation:
    assert drain()
    request_id = response.headers["x-momor-request-id"]
    assert Generation.objects.filter(request_id=request_id).count() == 1
    return Generation.objects.get(request_id=request_id)


def attempts(row: Generation) -> list[tuple[str, str, str, int | None]]:
    return [
        (a.provider, a.region, a.key_source, a.http_status)
        for a in Attempt.objects.filter(generation=row).order_by("position")
    ]


def test_a_served_call_is_recorded_with_its_attempt(world: World) -> None:
    response = world.post(ask(["openai/gpt-5"], models=["auto"]))
    row = generation(response)
    assert row.status == "success"
    assert row.http_status == 200
    assert row.model == "openai/gpt-5"
    assert row.provider == "openai"
    assert row.selectors == ["openai/gpt-5", "auto"]
    assert row.streamed is False
    assert row.organization_id == world.org.pk
    assert row.api_key is not None
    assert row.finish_reason == "stop"
    assert row.prompt_tokens == response.json()["usage"]["prompt_tokens"]
    assert row.completion_tokens == response.json()["usage"]["completion_tokens"]
    assert attempts(row) == [("openai", "", "momor", 200)]


def test_a_failover_records_every_attempt(world: World) -> None:
    save_key(world.org, "azure@eu", "acme-eu-key")
    settle()
    world.fake.script("gpt-5", fail={"status": 503})
    world.fake.script("gpt-5-azure-eu", fail={"status": 401}, fail_times=1)
    row = generation(world.post(ask()))
    assert row.status == "success"
    assert row.provider == "azure@eu"
    assert attempts(row) == [
        ("openai", "", "momor", 503),
        ("azure", "eu", "own", 401),
        ("azure", "eu", "momor", 200),
    ]


def test_a_call_that_failed_after_routing_is_recorded(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 500, "body": "boom"})
    response = world.post(ask("openai/gpt-5-mini"))
    assert response.status_code == 500
    row = generation(response)
    assert row.status == "failed"
    assert row.http_status == 500
    assert row.error
    assert attempts(row) == [("openai", "", "momor", 500)]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (ask("nobody/here"), 404),
        (ask(provider={"zdr": "yes"}), 400),
        (ask(stream="yes"), 400),
        ({"messages": []}, 400),
    ],
)
def test_a_call_refused_after_the_key_is_recorded(
    world: World, body: dict[str, object], status: int
) -> None:
    response = world.post(body)
    assert response.status_code == status
    row = generation(response)
    assert row.status == "refused"
    assert row.http_status == status
    assert row.error == response.json()["error"]["message"]
    assert attempts(row) == []


@pytest.mark.parametrize(
    ("body", "requested"),
    [
        (ask("nobody/here"), ["nobody/here"]),
        (ask(provider={"maxAge": "P999999999Y"}), ["openai/gpt-5"]),
        ({**ask("a/one"), "models": ["b/two", 3, " "], "stream": "yes"}, ["a/one", "b/two"]),
        ({"messages": []}, []),
    ],
)
def test_a_refused_call_is_recorded_with_what_it_requested(
    world: World, body: dict[str, object], requested: list[str]
) -> None:
    response = world.post(body)
    assert response.status_code in (400, 404)
    assert generation(response).selectors == requested


def test_a_call_refused_before_the_key_is_not_recorded(world: World) -> None:
    response = world.post(ask(), key="sk-momor-nobody")
    assert response.status_code == 401
    assert drain()
    assert not Generation.objects.filter(request_id=response.headers["x-momor-request-id"]).exists()


def test_a_stream_is_recorded_once_with_its_usage(world: World) -> None:
    world.fake.script("gpt-5", text="a b c")
    response = world.stream(ask())
    row = generation(response)
    assert row.status == "success"
    assert row.streamed is True
    assert row.completion_tokens == 3
    assert row.usage_estimated is False
    assert row.first_token_ms is not None
    assert attempts(row) == [("openai", "", "momor", 200)]


def test_a_stream_broken_after_output_is_recorded_failed(world: World) -> None:
    world.fake.script("gpt-5", text="a b c d", drop_after=2)
    row = generation(world.stream(ask()))
    assert row.status == "failed"
    assert row.finish_reason == "error"
    assert row.usage_estimated is True
    assert [a[0] for a in attempts(row)] == ["openai"]


def test_a_stream_that_failed_over_before_output_records_both(world: World) -> None:
    world.fake.script("gpt-5", stream_error_after=0)
    row = generation(world.stream(ask()))
    assert row.status == "success"
    assert [(a[0], a[1]) for a in attempts(row)] == [("openai", ""), ("azure", "eu")]


def test_a_client_that_leaves_mid_stream_is_recorded_cancelled(world: World) -> None:
    world.fake.script("gpt-5", text=" ".join(["w"] * 40), chunk_delay=0.1)
    with world.open_stream(ask(stream=True)) as response:
        request_id = response.headers["x-momor-request-id"]
        next(response.iter_lines())
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert row.status == "cancelled"
    assert Generation.objects.filter(request_id=request_id).count() == 1


def test_each_call_is_one_generation(world: World) -> None:
    responses = [world.post(ask()) for _ in range(3)] + [world.stream(ask())]
    assert drain()
    ids = {r.headers["x-momor-request-id"] for r in responses}
    assert Generation.objects.filter(request_id__in=ids).count() == 4


def test_a_chat_call_is_recorded_as_chat_and_shown_so_in_the_admin_and_the_export(
    world: World, admin_client: Client
) -> None:
    row = generation(world.post(ask("openai/gpt-5")))
    assert row.api == "chat"

    listed = admin_client.get("/admin/billing/generation/", {"api__exact": "chat"})
    assert listed.status_code == 200
    assert row.request_id[:8] in listed.content.decode()
    assert "Chat Completions" in listed.content.decode()
    others = admin_client.get("/admin/billing/generation/", {"api__exact": "embeddings"})
    assert row.request_id[:8] not in others.content.decode()
    detail = admin_client.get(f"/admin/billing/generation/{row.pk}/change/").content.decode()
    assert "Chat Completions" in detail

    member = Client()
    member.force_login(make_user("alice", world.org, Role.OWNER))
    export = list(csv.reader(io.StringIO(streamed(member.get("/generations/export.csv")))))
    assert export[0][-1] == "api"  # the new column last: the others keep their places
    assert export[0][:3] == ["request_id", "created_at", "model"]
    assert [line[0] for line in export[1:]] == [row.request_id]
    assert export[1][-1] == "chat"
