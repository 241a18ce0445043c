"""A records consumer's thread outlives a check of whether to consume that fails (as reading a
setting does while tests swap the settings): it keeps going and stores what comes next."""

from __future__ import annotations

import threading
import time

import pytest
from django.conf import settings

from accounts.models import Organization
from billing.admission.redis_store import RedisStore
from billing.calls.records import record_payload
from billing.models import Generation
from billing.recording.settlement import settlement_of
from billing.storing.stream_consumer import ConsumerThread
from tests.billing.records import a_record
from tests.conftest import make_org
from tests.redis_helpers import flush

# marked `celery`: the gateway's own consumer (started by earlier tests in this process) stays
# idle, so the record is this consumer's to store
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]


def test_a_failing_check_leaves_the_consumer_running_and_storing() -> None:
    flush(settings.REDIS_URL)
    org: Organization = make_org("acme")
    checks = {"left_to_fail": 3}

    def enabled() -> bool:
        if checks["left_to_fail"]:
            checks["left_to_fail"] -= 1
            raise AttributeError("settings are being swapped")
        return True

    consumer = ConsumerThread("flaky-check", enabled)
    consumer.start()
    try:
        record = a_record(org.pk)
        RedisStore(settings.REDIS_URL).hand_off_many(
            [settlement_of(record, record_payload(record))], int(time.time() * 1000)
        )
        deadline = time.monotonic() + 20
        while not Generation.objects.filter(request_id=record.request_id).exists():
            assert time.monotonic() < deadline, "the record was never stored"
            time.sleep(0.1)
        assert checks["left_to_fail"] == 0
        assert any(t.name == "momor-recorder" and t.is_alive() for t in threading.enumerate())
    finally:
        consumer.stop()
