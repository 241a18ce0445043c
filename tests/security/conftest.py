"""The attacker group: each test here plays someone trying to read a secret, reach an address
or tie up the server (`-m security` runs them alone). The gateway's fixtures are shared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.conftest import fake_token_endpoint, upstream_client, world  # noqa: F401 - fixtures, for this folder's tests
from tests.real_server import RealServer, start

TIMEOUT = 2  # MOMOR_BODY_TIMEOUT of the servers started here


def _running(kind: str, django_db_blocker: Any) -> Iterator[RealServer]:
    with django_db_blocker.unblock():
        server = start(kind, MOMOR_BODY_TIMEOUT=str(TIMEOUT), REDIS_URL="")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def uvicorn(django_db_setup: None, django_db_blocker: Any) -> Iterator[RealServer]:
    """Momor under uvicorn as the README runs it, in embedded mode, on the test database."""
    yield from _running("uvicorn", django_db_blocker)


@pytest.fixture(scope="module")
def daphne(django_db_setup: None, django_db_blocker: Any) -> Iterator[RealServer]:
    """Momor under Daphne, likewise."""
    yield from _running("daphne", django_db_blocker)
