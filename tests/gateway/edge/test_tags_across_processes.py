"""Sessions and X-Request-Id claims hold across gateway processes on one Redis: two real
server processes, one fake upstream."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.gateway.calls import ask, error_of, settled_world, tried  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.processes import Gateway, momor_env
from tests.real_server import database_url

OPENAI, AZURE_EU = "gpt-5", "gpt-5-azure-eu"


@pytest.fixture
def pair(world: World, tmp_path: Path) -> Iterator[tuple[str, str]]:
    env = momor_env(database_url(), settings.REDIS_URL, MOMOR_LOG_LEVEL="WARNING")
    started = [Gateway(env, tmp_path / f"gateway-{n}.log") for n in (1, 2)]
    try:
        for gateway in started:
            gateway.wait_ready()
            warm(gateway.url, world)
        yield started[0].url, started[1].url
    finally:
        for gateway in started:
            gateway.close()


def warm(url: str, world: World, seconds: float = 60) -> None:
    """Until the process has its catalog (a busy machine can make the first load slow)."""
    auth = {"authorization": f"Bearer {world.key}"}
    deadline = time.monotonic() + seconds
    while httpx.get(url + "/v1/models", headers=auth, timeout=30).status_code != 200:
        assert time.monotonic() < deadline, "the gateway never loaded its catalog"
        time.sleep(0.2)


def post(url: str, world: World, body: dict[str, object], **headers: str) -> httpx.Response:
    auth = {"authorization": f"Bearer {world.key}", **headers}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=auth, timeout=30)


def test_a_session_stays_put_on_either_process(world: World, pair: tuple[str, str]) -> None:
    first, second = pair
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    served = post(first, world, ask(), **{"x-session-id": "shared-s"})
    assert served.headers["x-momor-provider"] == "azure@eu"
    world.fake.reset()
    again = post(second, world, ask(session_id="shared-s"))
    assert again.headers["x-momor-provider"] == "azure@eu"
    assert tried(world.fake) == [AZURE_EU]


def test_a_request_id_sent_to_one_process_is_refused_by_the_other(
    world: World, pair: tuple[str, str]
) -> None:
    first, second = pair
    assert post(first, world, ask(), **{"x-request-id": "once-only"}).status_code == 200
    refused = post(second, world, ask(), **{"x-request-id": "once-only"})
    assert "once-only" in error_of(refused, 400, "invalid_value")["message"]
    assert refused.headers["x-request-id"] == "once-only"
