"""A journal whose disk hangs (its fsync never returns) holds no call: past
MOMOR_JOURNAL_TIMEOUT_SECONDS the answer goes out and the record is kept in memory for the
replay; once the disk answers, the call is stored and charged once."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from billing.admission import select
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from tests.billing.conftest import HI, World

CLOSED = "redis://127.0.0.1:9/0"  # records go to the journal


@pytest.fixture
def hung_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Every fsync of this process (the in-process gateway's journal writer) waits until the
    event is set."""
    answered = threading.Event()
    fsync = os.fsync

    def hanging(fd: int) -> None:
        answered.wait(30)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", hanging)
    try:
        yield answered
    finally:
        answered.set()


def test_a_hung_journal_neither_holds_the_answer_nor_loses_the_record(
    world: World, settings: Any, hung_disk: threading.Event
) -> None:
    settings.REDIS_URL = CLOSED
    settings.MOMOR_JOURNAL_TIMEOUT_SECONDS = 0.5
    select.store.cache_clear()
    world.fake.script("gpt-5", usage={"prompt_tokens": 1000, "completion_tokens": 100})

    began = time.monotonic()
    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 100})
    took = time.monotonic() - began

    assert response.status_code == 200, response.text
    assert took < 5
    hung_disk.set()
    assert drain()
    request_id = response.headers["x-momor-request-id"]
    assert Generation.objects.filter(request_id=request_id).count() == 1
    assert LedgerEntry.objects.filter(idempotency_key=f"charge:{request_id}").count() == 1
