"""RabbitMQ as the Celery broker (MOMOR_BROKER_URL): the task queue is a durable quorum queue,
every publish waits for the broker's confirm, so a record handed to the broker is stored even
when the broker is killed and started again before any worker takes it. The broker is a
RabbitMQ node of the test's own, never the machine's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal

import orjson
import pytest

from billing.models import Generation, LedgerEntry
from tests.billing.conftest import ROOT, World, child_env, stop
from tests.billing.storing.test_celery_recording import a_call_record, wait_for_generations
from tests.stores import RabbitMQServer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery,
    pytest.mark.rabbitmq,
    pytest.mark.timeout(400),  # a node starts in 20 to 60 s on a busy machine, and twice here
]

# Hands one record to the broker the way any Momor process would (the settings read
# MOMOR_BROKER_URL), and exits once the broker has confirmed it.
PUBLISH = (
    "import django, sys; django.setup(); "
    "import orjson; from billing.storing.tasks import record_generations; "
    "record_generations.delay([orjson.loads(sys.stdin.buffer.read())])"
)


@pytest.fixture
def rabbitmq() -> Iterator[RabbitMQServer]:
    if not os.path.exists("/usr/lib/rabbitmq/bin/rabbitmq-server") or not shutil.which("erl"):
        pytest.fail("RabbitMQ is not installed (scripts/test.sh installs rabbitmq-server)")
    server = RabbitMQServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


def publish(payload: dict[str, object], broker_url: str) -> None:
    env = child_env(MOMOR_BROKER_URL=broker_url)
    done = subprocess.run(  # noqa: S603 - our own interpreter, with code written here
        [sys.executable, "-c", PUBLISH], cwd=ROOT, env=env, input=orjson.dumps(payload),
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()


def queues_settled(rabbitmq: RabbitMQServer, within: float = 15.0) -> list[tuple[str, ...]]:
    """The queues as listed once a message count shows (a quorum queue's count can lag the
    confirmed publish by a moment), or as last listed."""
    deadline = time.monotonic() + within
    listed = rabbitmq.queues()
    while not any(row[-1] != "0" for row in listed) and time.monotonic() < deadline:
        time.sleep(0.5)
        listed = rabbitmq.queues()
    return listed


def start_worker(broker_url: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "momor", "worker", "--pool", "solo"]
    command += ["-l", "warning", "-n", f"rabbitmq-test-{uuid.uuid4().hex[:8]}@%h"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = child_env(MOMOR_BROKER_URL=broker_url)
    return subprocess.Popen(command, cwd=ROOT, env=env)  # noqa: S603 - our own Celery worker, argv written here


def test_a_record_handed_to_rabbitmq_survives_the_broker_being_killed(
    world: World, rabbitmq: RabbitMQServer
) -> None:
    payload = orjson.loads(orjson.dumps(a_call_record(world)))
    publish(payload, rabbitmq.url)
    assert queues_settled(rabbitmq) == [("celery", "quorum", "true", "1")]

    rabbitmq.kill()  # SIGKILL: nothing is flushed on the way out
    rabbitmq.start()
    assert queues_settled(rabbitmq) == [("celery", "quorum", "true", "1")]

    worker = start_worker(rabbitmq.url)
    try:
        [generation] = wait_for_generations([payload["request_id"]], timeout=60)
    finally:
        stop(worker)
    charges = LedgerEntry.objects.filter(generation=generation)
    assert [charge.amount for charge in charges] == [Decimal("-0.002250000")]
    assert Generation.objects.count() == 1
