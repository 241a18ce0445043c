"""A gateway process whose wall clock libfaketime moves (its monotonic clock left alone), warmed
for the test's world and stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from tests.billing.conftest import World
from tests.gateway.edge.test_tags_across_processes import warm
from tests.processes import Gateway, momor_env
from tests.real_server import database_url

FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


@contextmanager
def gateway_with_clock(world: World, log: Path, **env: str) -> Iterator[str]:
    """The gateway's URL; `env` says how its clock is moved (`FAKETIME`, or
    `FAKETIME_TIMESTAMP_FILE`...) and any setting of its own."""
    if not FAKETIME.exists():
        pytest.skip("libfaketime is not installed (apt package faketime)")
    gateway = Gateway(
        momor_env(
            database_url(), settings.REDIS_URL,
            LD_PRELOAD=str(FAKETIME), FAKETIME_DONT_FAKE_MONOTONIC="1",
            MOMOR_CACHE_REDIS_URL=settings.MOMOR_CACHE_REDIS_URL, MOMOR_LOG_LEVEL="WARNING",
            **env,
        ),
        log,
    )  # fmt: skip
    try:
        gateway.wait_ready()
        warm(gateway.url, world)
        yield gateway.url
    finally:
        gateway.close()
