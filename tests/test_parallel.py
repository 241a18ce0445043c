"""tests/parallel.py: what each pytest-xdist worker's environment says of its Redis, and that
this worker's settings read it."""

from __future__ import annotations

import os

from django.conf import settings

from tests.parallel import worker_environment

SINGLE = {"REDIS_URL": "redis://:pw@127.0.0.1:6379/15", "MOMOR_CACHE_REDIS_URL": "redis://c:1/15"}


def test_the_first_worker_keeps_the_database_it_was_given() -> None:
    assert worker_environment("gw0", SINGLE) == SINGLE


def test_each_other_worker_takes_one_below_the_benchmarks_databases() -> None:
    assert worker_environment("gw1", SINGLE) == {
        "REDIS_URL": "redis://:pw@127.0.0.1:6379/11",
        "MOMOR_CACHE_REDIS_URL": "redis://c:1/11",
    }
    assert worker_environment("gw3", {"REDIS_URL": "redis://h:1"}) == {"REDIS_URL": "redis://h:1/9"}


def test_a_cluster_and_an_unset_url_are_left_as_they_are() -> None:
    cluster = {"REDIS_URL": "redis+cluster://10.0.0.1:7000", "MOMOR_CACHE_REDIS_URL": ""}
    assert worker_environment("gw2", cluster) == cluster
    assert worker_environment("gw2", {}) == {}


def test_this_workers_settings_read_its_own_database() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    mine = worker_environment(worker, {"REDIS_URL": settings.REDIS_URL})["REDIS_URL"]
    assert settings.REDIS_URL == mine == os.environ["REDIS_URL"]
