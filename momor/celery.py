"""The Celery application; a broker exists only when REDIS_URL is set."""

from __future__ import annotations

import os

import orjson
from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger
from kombu.serialization import register

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")

app = Celery("momor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The gateway hands its records to Celery as dataclasses; orjson encodes them in C (Celery's
# json serializer wants plain dicts, built in Python on every call).
register(
    "orjson", orjson.dumps, orjson.loads,
    content_type="application/x-orjson", content_encoding="binary",
)  # fmt: skip


@after_setup_logger.connect
@after_setup_task_logger.connect
def _scrub_worker_logs(**kwargs: object) -> None:
    """The worker's own handlers mask secrets like every other (momor/logs.py)."""
    from momor.logs import install

    install()
