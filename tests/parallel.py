"""Each pytest-xdist worker on stores of its own. pytest-django gives each worker its own test
database (`test_momor_gw1`); here each worker's REDIS_URL and MOMOR_CACHE_REDIS_URL name a
Redis database of its own (the suite flushes its database between tests), set in the worker's
environment as soon as its process starts, before it reads Django's settings. Worker gw0 keeps
the database it was given; gw1 takes 11, gw2 10 and so on, clear of 12 to 14 (the benchmark's
databases). A Redis Cluster has one database: workers on one would share it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from core.redis_client import is_cluster

FIRST_FREE_BELOW_BENCH = 11
SET_ENVIRONMENT = "import os; os.environ.update(channel.receive())"


def with_database(url: str, worker: int) -> str:
    """`url` on worker `worker`'s own Redis database."""
    if not url or is_cluster(url) or worker == 0:
        return url
    database = FIRST_FREE_BELOW_BENCH - (worker - 1)
    if database < 0:
        raise pytest.UsageError(f"no Redis database left for pytest-xdist worker {worker}")
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def worker_environment(worker_id: str, environment: Mapping[str, str]) -> dict[str, str]:
    """What worker `worker_id` (gw0, gw1...) changes in the environment it inherits."""
    worker = int(worker_id.removeprefix("gw"))
    names = ("REDIS_URL", "MOMOR_CACHE_REDIS_URL")
    return {name: with_database(environment[name], worker) for name in names if name in environment}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_newgateway(gateway: Any) -> None:
    channel = gateway.remote_exec(SET_ENVIRONMENT)
    channel.send(worker_environment(gateway.id, os.environ))
    channel.waitclose()
