"""The Celery application; its broker is MOMOR_BROKER_URL's, else the single Redis of
MOMOR_CACHE_REDIS_URL or REDIS_URL (none in embedded mode). With REDIS_URL every worker also
consumes the records streams (billing.storing.stream_consumer) on a thread of its own, so the
operator runs `celery -A momor worker` and nothing else."""

from __future__ import annotations

import os
import socket
from typing import Any

import orjson
from celery import Celery, bootsteps
from celery.signals import after_setup_logger, after_setup_task_logger
from kombu.serialization import register
from kombu.transport import redis as kombu_redis

from core.redis_refusals import REFUSALS

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")

# A Redis broker that takes no writes (full, or a replica after a failover) is lost to the
# worker until it takes them again, as one that cannot be reached is: the worker connects again
# rather than stopping on an "unrecoverable" error.
kombu_redis.Transport.connection_errors = (*kombu_redis.Transport.connection_errors, *REFUSALS)

app = Celery("momor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Billing's tasks live with the storing they do (billing/storing/tasks.py), not at the app's top.
app.autodiscover_tasks(["billing.storing"])

# Records queued as Celery messages by earlier versions are dataclasses encoded by orjson
# (Celery's json serializer wants plain dicts, built in Python on every call).
# kombu's stubs type an encoder as answering str; kombu sends bytes as they are.
register(
    "orjson", orjson.dumps, orjson.loads,  # type: ignore[arg-type]  # kombu sends the bytes as they are
    content_type="application/x-orjson", content_encoding="binary",
)  # fmt: skip


@after_setup_logger.connect
@after_setup_task_logger.connect
def _scrub_worker_logs(**kwargs: object) -> None:
    """The worker's own handlers mask secrets like every other (momor/logs.py)."""
    from momor.logs import install

    install()


class RecordsConsumerStep(bootsteps.StartStopStep):
    """The records stream's consumer, started and stopped with the worker."""

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.thread: Any = None

    def start(self, worker: Any) -> None:
        from django.conf import settings

        from billing.retention.maintenance import records_maintain_quietly
        from billing.storing.stream_consumer import ConsumerThread

        records_maintain_quietly()
        if settings.REDIS_URL:
            name = f"{worker.hostname or socket.gethostname()}-{os.getpid()}"
            self.thread = ConsumerThread(name)
            self.thread.start()

    def stop(self, worker: Any) -> None:
        if self.thread is not None:
            self.thread.stop()


class AlertsStep(bootsteps.StartStopStep):
    """The alerts loop (alerts/loop.py), started and stopped with the worker: it checks the
    rules and hands each due delivery to the workers."""

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.loop: Any = None

    def start(self, worker: Any) -> None:
        from django.conf import settings

        from alerts.loop import AlertsLoop, by_worker

        if settings.MOMOR_ALERTS:
            self.loop = AlertsLoop(by_worker)
            self.loop.start()

    def stop(self, worker: Any) -> None:
        if self.loop is not None:
            self.loop.stop()


app.steps["worker"].add(RecordsConsumerStep)
app.steps["worker"].add(AlertsStep)
