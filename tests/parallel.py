"""Each pytest-xdist worker on stores of its own: loaded with `-p tests.parallel`, before Django
reads its settings. pytest-django gives each worker its own test database (`test_momor_gw1`);
here each worker's REDIS_URL and MOMOR_CACHE_REDIS_URL name a Redis database of its own
(the suite flushes its database between tests). Worker gw0, and a run without workers, keep the
database they were given; gw1 takes the one below it, and so on, staying clear of 12 to 14 (the
benchmark's databases)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from core.redis_client import is_cluster

FIRST_FREE_BELOW_BENCH = 11


def worker_index() -> int:
    """0 without xdist or on its first worker (gw0), else the worker's number."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw"))


def with_database(url: str, index: int) -> str:
    """`url` on a Redis database of the worker's own."""
    if not url or is_cluster(url) or index == 0:
        return url
    parts = urlsplit(url)
    database = FIRST_FREE_BELOW_BENCH - (index - 1)
    if database < 0:
        raise RuntimeError(f"no Redis database left for pytest-xdist worker {index}")
    return urlunsplit(parts._replace(path=f"/{database}"))


for name in ("REDIS_URL", "MOMOR_CACHE_REDIS_URL"):
    if os.environ.get(name):
        os.environ[name] = with_database(os.environ[name], worker_index())
