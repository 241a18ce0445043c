"""The hot path: after warm-up a call makes no database query, on any thread of the gateway
but the background refresher's and the recorders'; and a key revoked in the database stops
working within seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db.backends import utils

from accounts.models import ApiKey
from tests.billing.storing.test_celery_recording import wait_for_generations
from tests.conftest import make_key
from tests.gateway.calls import (
    ask,
    error_of,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World

BACKGROUND = ("momor-refresh", "momor-recorder", "momor-replay")


class QueryLog:
    """Every SQL statement run through Django's cursors, on every thread, but the background
    ones."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def note(self, sql: str) -> None:
        thread = threading.current_thread().name
        if thread.startswith(BACKGROUND):
            return
        with self.lock:
            self.queries.append((thread, sql))

    def clear(self) -> None:
        with self.lock:
            self.queries.clear()


def _counting(log: QueryLog, original: Callable[..., Any]) -> Callable[..., Any]:
    def execute(self: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        log.note(sql)
        return original(self, sql, *args, **kwargs)

    return execute


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> Iterator[QueryLog]:
    log = QueryLog()
    for name in ("execute", "executemany"):
        monkeypatch.setattr(
            utils.CursorWrapper, name, _counting(log, getattr(utils.CursorWrapper, name))
        )
    yield log


def test_a_warm_plain_call_makes_no_query(world: World, queries: QueryLog) -> None:
    assert world.post(ask()).status_code == 200
    queries.clear()
    for _ in range(3):
        assert world.post(ask()).status_code == 200
    assert queries.queries == []


def test_a_warm_streamed_call_makes_no_query(world: World, queries: QueryLog) -> None:
    assert world.stream(ask()).status_code == 200
    queries.clear()
    for _ in range(3):
        response = world.stream(ask())
        assert response.text.endswith("data: [DONE]\n\n")
    assert queries.queries == []


def test_a_warm_refusal_makes_no_query(world: World, queries: QueryLog) -> None:
    assert world.post(ask()).status_code == 200
    queries.clear()
    error_of(world.post(ask("nobody/here")), 404, "model_not_found")
    error_of(world.post(ask(provider={"zdr": 1})), 400, "invalid_value")
    world.fake.script("gpt-5-mini", fail={"status": 503})
    assert world.post(ask("openai/gpt-5-mini")).status_code == 503
    assert queries.queries == []


def test_a_warm_failover_makes_no_query(world: World, queries: QueryLog) -> None:
    assert world.post(ask()).status_code == 200
    queries.clear()
    world.fake.script("gpt-5", fail={"status": 503})
    assert world.post(ask()).status_code == 200
    assert queries.queries == []


def test_a_warm_call_with_tags_filters_and_a_measured_sort_makes_no_query(
    world: World, queries: QueryLog
) -> None:
    assert world.post(ask()).status_code == 200
    queries.clear()
    prefs = {"only": ["openai", "azure"], "sort": "latency", "max_price": {"prompt": 5}}
    for n in range(3):
        headers = {"x-request-id": f"hot-{n}", "x-session-id": "hot", "x-title": "Hot"}
        body = ask(provider={**prefs, "require_parameters": True}, temperature=0.5)
        assert world.post(body, headers=headers).status_code == 200
    error_of(world.post(ask(), headers={"x-request-id": "hot-0"}), 400, "invalid_value")
    assert queries.queries == []


def test_a_warm_call_with_routing_metadata_makes_no_query(world: World, queries: QueryLog) -> None:
    headers = {"x-momor-metadata": "enabled"}
    assert world.post(ask(), headers=headers).status_code == 200
    queries.clear()
    world.fake.script("gpt-5", fail={"status": 503})
    assert "momor_metadata" in world.post(ask(), headers=headers).json()
    streamed = world.post(ask(stream=True), headers=headers)
    assert "momor_metadata" in streamed.text
    refused = world.post(ask(provider={"ignore": ["openai", "azure", "azure@eu"]}), headers=headers)
    assert refused.status_code == 404
    assert "momor_metadata" in refused.json()
    assert queries.queries == []


def test_the_query_log_sees_the_first_call(world: World, queries: QueryLog) -> None:
    """The counter works: a key never seen before is looked up once."""
    key, _ = make_key(world.org, name="new")
    assert world.post(ask(), key=key).status_code == 200
    assert any("accounts_apikey" in sql for _, sql in queries.queries)


def wait_for(status: int, world: World, key: str, seconds: float = 5.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if world.post(ask("openai/gpt-5-mini"), key=key).status_code == status:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"no {status} within {seconds} s")


def test_a_key_revoked_in_the_database_stops_working_within_seconds(world: World) -> None:
    key, row = make_key(world.org, name="soon revoked")
    assert world.post(ask(), key=key).status_code == 200
    row.revoke()
    assert wait_for(401, world, key) < 3


def test_a_key_deleted_from_the_database_stops_working_within_seconds(world: World) -> None:
    key, row = make_key(world.org, name="soon deleted")
    answered = world.post(ask(), key=key)
    assert answered.status_code == 200
    wait_for_generations([answered.headers["x-momor-request-id"]])  # stored before the key goes
    ApiKey.objects.filter(pk=row.pk).delete()
    assert wait_for(401, world, key) < 3


def test_an_organization_policy_change_lands_within_seconds(world: World) -> None:
    assert world.post(ask()).headers["x-momor-provider"] == "openai"
    world.org.zdr_hold = True
    world.org.save()
    started = time.monotonic()
    while time.monotonic() - started < 3:
        if world.post(ask()).headers.get("x-momor-provider") == "azure@eu":
            return
        time.sleep(0.05)
    raise AssertionError("the ZDR hold did not land within 3 s")
