"""The Celery broker's settings for the URL it is given: a Redis (the default, REDIS_URL's or
MOMOR_CACHE_REDIS_URL's) or RabbitMQ (`amqp://`, `amqps://`, `pyamqp://`).

On RabbitMQ the task queue is a durable quorum queue (replicated by Raft over the cluster's
nodes, every message persistent) and each publish waits for the broker's confirm, so a record
handed to the broker has been written by it and survives its restart."""

from __future__ import annotations

from typing import Any

from kombu import Queue

AMQP_SCHEMES = ("amqp", "amqps", "pyamqp")
QUEUE = "celery"


def is_amqp(url: str | None) -> bool:
    if not url:
        return False
    return url.split("://", 1)[0].lower() in AMQP_SCHEMES


def transport_options(
    url: str | None, visibility_timeout: int, redis_socket: dict[str, float]
) -> dict[str, Any]:
    if is_amqp(url):
        return {"confirm_publish": True}
    # a message taken by a worker that died is delivered again after the visibility time-out
    # (Redis transport's default is an hour); socket time-outs so a Redis that stops answering
    # is noticed
    return {"visibility_timeout": visibility_timeout, **redis_socket}


def task_queues(url: str | None) -> tuple[Queue, ...] | None:
    """Celery's own default queue, declared as a quorum queue on RabbitMQ."""
    if not is_amqp(url):
        return None
    quorum = {"x-queue-type": "quorum"}
    return (Queue(QUEUE, routing_key=QUEUE, durable=True, queue_arguments=quorum),)
