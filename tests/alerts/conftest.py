"""An SMTP server on loopback, a Celery worker whose alerts loop checks often, and the loopback
network the webhook receivers (tests/webhook_receiver.py) listen on, allowed."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.billing.conftest import World, child_env, world
from tests.processes import Worker
from tests.webhook_receiver import Receiver

__all__ = ["Receiver", "world"]  # the receiver's class; the gateway's world, as billing has it

LOOPBACK = "127.0.0.1/32"
"""The receivers' network: the outbound-address guard refuses it unless it is allowed."""


@pytest.fixture(autouse=True)
def loopback_allowed(settings: Any) -> None:
    """The webhook receivers of these tests are on loopback, as an internal receiver an operator
    allows with MOMOR_OUTBOUND_ALLOW would be."""
    settings.MOMOR_OUTBOUND_ALLOW = [LOOPBACK]


@dataclass
class Mailbox:
    host: str
    port: int
    messages: list[Any] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope)
        return "250 Message accepted for delivery"


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    box = Mailbox("127.0.0.1", port)
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


@pytest.fixture
def alerts_worker(world: World, mailbox: Mailbox, tmp_path: Path) -> Iterator[Worker]:
    """`celery -A momor worker` checking the rules every 0.3 s and mailing to `mailbox`."""
    worker = start_alerts_worker(mailbox, tmp_path)
    try:
        yield worker
    finally:
        worker.close()


def start_alerts_worker(mailbox: Mailbox, tmp_path: Path, **extra: str) -> Worker:
    from momor.celery import app

    app.control.purge()
    env = child_env(
        MOMOR_ALERTS_INTERVAL_SECONDS="0.3",
        MOMOR_EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        MOMOR_EMAIL_HOST=mailbox.host,
        MOMOR_EMAIL_PORT=str(mailbox.port),
        MOMOR_FROM_EMAIL="alerts@momor.example",
        MOMOR_OUTBOUND_ALLOW=LOOPBACK,
        **extra,
    )
    name = f"alerts-{time.monotonic_ns()}"
    worker = Worker(env, tmp_path / f"{name}.log", name)
    try:
        worker.wait_ready(env["REDIS_URL"], timeout=90)
    except BaseException:
        worker.close()
        raise
    return worker
