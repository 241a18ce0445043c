"""Many simultaneous calls at one organization, across two gateway processes sharing Redis and
PostgreSQL (records through a Celery worker): no overspend, the ledger balances, one record
per call, every reservation settled or released; a key's rate limit is shared too."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db.models import Sum

from billing.admission import store
from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from tests.billing.conftest import HI, Cluster
from tests.conftest import make_key, make_org
from tests.rate_window import fresh_rate_window

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

CALLS = 40
CALL = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 1000}
ACTUAL = Decimal("0.001002500")  # 10 x 0.25 + 500 x 2 per million: under each reservation


def wait_until(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_simultaneous_calls_never_overspend_and_every_reservation_is_settled(
    cluster: Cluster,
) -> None:
    initial = Decimal("0.010000000")
    org = make_org("thrift", credits=initial)
    key, _ = make_key(org, name="busy")
    cluster.world.fake.script(
        "gpt-5-mini",
        text="Yes.",
        usage={"prompt_tokens": 10, "completion_tokens": 500},
        delay_first_byte=0.5,
    )

    with ThreadPoolExecutor(max_workers=CALLS) as pool:
        responses = list(pool.map(lambda i: cluster.post(i, CALL, key=key), range(CALLS)))

    statuses = [r.status_code for r in responses]
    served = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 402]
    assert len(served) + len(refused) == CALLS, statuses
    assert served and refused
    assert {r.json()["error"]["code"] for r in refused} == {"insufficient_credits"}
    assert {Decimal(str(r.json()["usage"]["cost"])) for r in served} == {ACTUAL}
    assert len(served) <= initial // ACTUAL  # no overspend, whatever the interleaving

    ids = {r.headers["x-momor-request-id"] for r in responses}
    wait_until(lambda: Generation.objects.filter(organization=org).count() >= CALLS)
    generations = Generation.objects.filter(organization=org)
    assert {g.request_id for g in generations} == ids  # exactly one per call
    by_status = {(g.status, g.http_status) for g in generations}
    assert by_status == {("success", 200), ("refused", 402)}
    assert generations.filter(status="success").count() == len(served)

    org.refresh_from_db()
    spent = generations.aggregate(s=Sum("cost"))["s"]
    assert spent == ACTUAL * len(served)
    assert org.balance == initial - spent == ledger_sum(org.pk)
    assert org.balance >= 0
    assert LedgerEntry.objects.filter(organization=org, kind="charge").count() == len(served)
    assert store().open_reservations(org.pk, int(time.time() * 1000)) == {}
    wait_until(lambda: store().unposted(org.pk) == {}, timeout=5)


def test_a_key_rate_limit_is_shared_by_every_gateway_process(cluster: Cluster) -> None:
    fresh_rate_window()
    key, _ = make_key(cluster.world.org, name="limited", rate_limit=3)
    body = {"model": "openai/gpt-5-mini", "messages": HI}

    responses = [cluster.post(i, body, key=key) for i in range(5)]

    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert [r.headers["x-ratelimit-limit"] for r in responses] == ["3"] * 5
    assert [r.headers["x-ratelimit-remaining"] for r in responses] == ["2", "1", "0", "0", "0"]
    reset = int(responses[0].headers["x-ratelimit-reset"])
    assert reset % 60 == 0 and 0 < reset - time.time() <= 60
    refused = responses[3]
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert refused.json()["error"]["type"] == "rate_limit_error"
