"""A stream is billed once its provider has started answering, whatever stops its gateway: a
gateway SIGKILLed mid-answer leaves a call whose delivered content is billed once, from its
last progress mark (with Redis: by the sweep, once its reservation has expired; embedded: by
the journal's replay in the next process), and a stream that ends is recorded once, as it
ended."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import httpx
import orjson
import psycopg
import pytest
import redis

from billing.admission.intents import started_key
from core.redis_keys import org_group, org_key
from tests.chaos.books import org_id, wait_recorded
from tests.chaos.conftest import MODEL, UPSTREAM_ID, Deployment, Stores
from tests.chaos.test_journal import an_org, balances, charges, embedded_gateway
from tests.processes import Gateway

pytestmark = pytest.mark.chaos

WORDS = 200
SEEN = 16


def long_answer(stores: Stores) -> None:
    stores.fake.script(
        UPSTREAM_ID, text="word " * WORDS, chunks=WORDS, chunk_delay=0.05,
        usage={"prompt_tokens": 12, "completion_tokens": WORDS},
    )  # fmt: skip


def stream_then_kill(gateway: Gateway, key: str, on_first: object = None) -> tuple[str, int]:
    """A long stream read until SEEN content chunks reached the client, then its gateway
    SIGKILLed; the call's request id and the characters the client saw."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    headers = {"authorization": f"Bearer {key}"}
    seen, chars = 0, 0
    url = gateway.url + "/v1/chat/completions"
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as response:
        request_id = response.headers["x-momor-request-id"]
        for line in response.iter_lines():
            content = _content(line)
            if content:
                seen, chars = seen + 1, chars + len(content)
                if callable(on_first) and seen == 1:
                    on_first(request_id)
            if seen == SEEN:
                gateway.kill()
                break
    assert seen == SEEN
    return request_id, chars


def _content(line: str) -> str:
    if not line.startswith("data: {"):
        return ""
    choices = orjson.loads(line[len("data: ") :]).get("choices") or [{}]
    return str((choices[0].get("delta") or {}).get("content") or "")


def generation(stores: Stores, request_id: str) -> tuple[str, Decimal, int, bool, str]:
    with psycopg.connect(stores.database_url) as conn:
        row = conn.execute(
            "SELECT status, cost, completion_tokens, usage_estimated, error "
            "FROM billing_generation WHERE request_id = %s",
            [request_id],
        ).fetchone()
    assert row is not None
    return row[0], row[1], row[2], row[3], row[4]


def assert_billed_what_it_delivered(stores: Stores, slug: str, request_id: str, chars: int) -> None:
    status, cost, completion, estimated, error = generation(stores, request_id)
    assert (status, estimated) == ("failed", True)
    assert "Momor stopped mid-answer" in error
    assert cost > 0
    # the last mark covers what had been delivered a second before the kill, at most one read
    # beyond what the client saw
    assert 1 <= completion <= (chars + len("word ") + 3) // 4
    assert charges(stores, [request_id]) == 1
    balance, ledger = balances(stores, slug)
    assert balance == ledger


def test_a_stream_killed_mid_answer_is_billed_its_delivered_tokens_once_its_reservation_expires(
    deployment: Deployment,
) -> None:
    stores = deployment.stores
    long_answer(stores)
    gateway = deployment.gateway()
    deployment.worker()
    client = redis.Redis.from_url(stores.redis.url)
    org = org_id(stores.database_url, deployment.org)
    held: list[int] = []

    def reservation(request_id: str) -> None:
        value = client.hget(org_key(org, "adm", "res"), request_id)
        assert value is not None
        held.append(int(value.split(b":")[0]))

    request_id, chars = stream_then_kill(gateway, deployment.key, reservation)

    wait_recorded(stores.database_url, [request_id], timeout=60)
    assert_billed_what_it_delivered(stores, deployment.org, request_id, chars)
    assert generation(stores, request_id)[1] * 10**9 <= held[0]
    assert client.zrange(org_key(org, "adm", "resexp"), 0, -1) == []  # settled, not held
    assert client.hlen(org_key(org, "adm", "intent")) == 0


def test_an_embedded_stream_killed_mid_answer_is_billed_by_the_next_process(
    chaos_stores: Stores, tmp_path: Path
) -> None:
    stores, journal = chaos_stores, tmp_path / "journal"
    slug, key = an_org(stores)
    long_answer(stores)
    first = embedded_gateway(stores, journal)

    request_id, chars = stream_then_kill(first, key)

    second = embedded_gateway(stores, journal)  # applies what the first left, on start
    wait_recorded(stores.database_url, [request_id], timeout=30)
    assert_billed_what_it_delivered(stores, slug, request_id, chars)
    second.terminate()
    assert not list(journal.glob("*.journal"))


def test_a_stream_that_ends_is_recorded_once_as_served(deployment: Deployment) -> None:
    stores = deployment.stores
    gateway = deployment.gateway()
    deployment.worker()
    client = redis.Redis.from_url(stores.redis.url)
    org = org_id(stores.database_url, deployment.org)

    request_id = _streamed(gateway, deployment.key)

    assert client.hlen(org_key(org, "adm", "intent")) == 0  # the settle took it with it
    wait_recorded(stores.database_url, [request_id], timeout=30)
    index, member = started_key(org_group(org)), f"{org}:{request_id}"
    deadline = time.monotonic() + 15  # the sweep drops it once its reservation would expire
    while time.monotonic() < deadline and client.zscore(index, member) is not None:
        time.sleep(0.25)
    assert client.zscore(index, member) is None
    assert generation(stores, request_id)[0] == "success"
    assert charges(stores, [request_id]) == 1


def test_an_embedded_stream_that_ended_is_recorded_as_served_after_a_kill(
    chaos_stores: Stores, tmp_path: Path
) -> None:
    stores, journal = chaos_stores, tmp_path / "journal"
    slug, key = an_org(stores)
    first = embedded_gateway(stores, journal)
    assert _streamed(first, key)  # the key and the balance are now in memory

    stores.postgres.stop("fast")  # its intents and its record stay in the journal
    try:
        request_id = _streamed(first, key)
        first.kill()
    finally:
        stores.postgres.start()

    second = embedded_gateway(stores, journal)
    wait_recorded(stores.database_url, [request_id], timeout=30)
    assert generation(stores, request_id)[0] == "success"
    assert charges(stores, [request_id]) == 1
    balance, ledger = balances(stores, slug)
    assert balance == ledger
    second.terminate()


def _streamed(gateway: Gateway, key: str) -> str:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    headers = {"authorization": f"Bearer {key}"}
    url = gateway.url + "/v1/chat/completions"
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    assert response.text.endswith("data: [DONE]\n\n")
    return response.headers["x-momor-request-id"]
