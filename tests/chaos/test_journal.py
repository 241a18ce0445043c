"""A served call's record survives the gateway: in embedded mode (no Redis) it is in the local
journal, on disk, before the answer's last byte; a gateway SIGKILLed while the database is
down leaves its journal to the next one, which applies it on start. SIGTERM lets the calls
under way finish, for a grace period at most, and hands their records off before exiting."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.chaos.books import org_id, wait_recorded
from tests.chaos.conftest import MODEL, UPSTREAM_ID, Stores
from tests.processes import Gateway

pytestmark = pytest.mark.chaos

HI = [{"role": "user", "content": "hi"}]


def an_org(stores: Stores) -> tuple[str, str]:
    slug = f"journal-{uuid.uuid4().hex[:8]}"
    stores.manage("create_org", slug, "--credits", "1000")
    return slug, stores.manage("create_api_key", "--org", slug, "--name", "journal")


def embedded_gateway(stores: Stores, journal: Path, server: str = "uvicorn", **env: str) -> Gateway:
    log = stores.directory / f"embedded-{uuid.uuid4().hex[:6]}.log"
    environment = stores.env(embedded=True, MOMOR_JOURNAL_DIR=str(journal), **env)
    started = Gateway(environment, log, server)
    started.wait_ready()
    return started


def post(gateway: Gateway, key: str, *, stream: bool = False) -> httpx.Response:
    body = {"model": MODEL, "messages": HI, "stream": stream}
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def balances(stores: Stores, slug: str) -> tuple[object, object]:
    with psycopg.connect(stores.database_url) as conn:
        row = conn.execute(
            "SELECT o.balance, (SELECT sum(amount) FROM billing_ledgerentry l "
            "WHERE l.organization_id = o.id) FROM accounts_organization o WHERE o.slug = %s",
            [slug],
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def charges(stores: Stores, request_ids: list[str]) -> int:
    keys = [f"charge:{rid}" for rid in request_ids]
    with psycopg.connect(stores.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM billing_ledgerentry WHERE idempotency_key = ANY(%s)", [keys]
        ).fetchone()
    return int(row[0]) if row else 0


def test_records_journaled_while_the_database_is_down_survive_a_sigkill(
    chaos_stores: Stores, tmp_path: Path
) -> None:
    stores, journal = chaos_stores, tmp_path / "journal"
    slug, key = an_org(stores)
    stores.fake.script(UPSTREAM_ID, usage={"prompt_tokens": 12, "completion_tokens": 6})
    first = embedded_gateway(stores, journal)
    assert post(first, key).status_code == 200  # the key and the balance are now in memory

    stores.postgres.stop("fast")
    try:
        served = [post(first, key, stream=i % 2 == 1) for i in range(6)]
        assert [r.status_code for r in served] == [200] * 6
        assert all(r.text.endswith("data: [DONE]\n\n") for r in served[1::2])
        first.kill()
        assert list(journal.glob("*.journal"))  # on disk, where the next process finds it
    finally:
        stores.postgres.start()

    second = embedded_gateway(stores, journal)  # applies what the first left, on start
    ids = [r.headers["x-momor-request-id"] for r in served]
    wait_recorded(stores.database_url, ids, timeout=30)
    assert charges(stores, ids) == 6
    balance, ledger = balances(stores, slug)
    assert balance == ledger
    second.terminate()
    assert not list(journal.glob("*.journal"))  # compacted once applied


def open_stream(gateway: Gateway, key: str, result: list[bytes]) -> threading.Thread:
    """A streamed call read on a thread until it ends; its bytes land in `result`."""

    def read() -> None:
        body = {"model": MODEL, "messages": HI, "stream": True}
        headers = {"authorization": f"Bearer {key}"}
        url = gateway.url + "/v1/chat/completions"
        received = b""
        try:
            with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
                result.append(response.headers["x-momor-request-id"].encode())
                for part in response.iter_raw():
                    received += part
        except httpx.HTTPError:
            pass
        result.append(received)

    reader = threading.Thread(target=read)
    reader.start()
    return reader


SERVERS = pytest.mark.parametrize("server", ["uvicorn", "daphne"])


@SERVERS
def test_sigterm_lets_the_calls_under_way_finish_and_hands_their_records_off(
    chaos_stores: Stores, tmp_path: Path, server: str
) -> None:
    stores = chaos_stores
    slug, key = an_org(stores)
    stores.fake.script(
        UPSTREAM_ID, text="a b c d e f g h", chunks=8, chunk_delay=0.25,
        usage={"prompt_tokens": 12, "completion_tokens": 8},
    )  # fmt: skip
    gateway = embedded_gateway(stores, tmp_path / "journal", server)
    results: list[list[bytes]] = [[] for _ in range(4)]
    readers = [open_stream(gateway, key, result) for result in results]
    time.sleep(0.8)  # every stream has begun and has about 1.5 s to go

    assert gateway.terminate() in (0, -signal.SIGTERM)

    for reader in readers:
        reader.join(10)
    assert all(result[-1].endswith(b"data: [DONE]\n\n") for result in results)
    ids = [result[0].decode() for result in results]
    # the process has exited: its records were stored before it did
    wait_recorded(stores.database_url, ids, timeout=0.5)
    assert charges(stores, ids) == 4
    assert org_id(stores.database_url, slug) > 0


@SERVERS
def test_past_the_grace_period_calls_are_cancelled_recorded_and_the_process_exits(
    chaos_stores: Stores, tmp_path: Path, server: str
) -> None:
    stores = chaos_stores
    slug, key = an_org(stores)
    stores.fake.script(UPSTREAM_ID, text="word " * 40, chunks=40, chunk_delay=0.5)
    gateway = embedded_gateway(
        stores, tmp_path / "journal", server, MOMOR_SHUTDOWN_GRACE_SECONDS="1"
    )
    result: list[bytes] = []
    reader = open_stream(gateway, key, result)
    time.sleep(1.5)  # a few chunks delivered, about 18 s to go

    started = time.monotonic()
    assert gateway.terminate() in (0, -signal.SIGTERM)
    took = time.monotonic() - started
    reader.join(10)

    assert took < 8, f"the gateway took {took:.1f} s to exit with a 1 s grace period"
    assert b"data: [DONE]" not in result[-1]
    request_id = result[0].decode()
    wait_recorded(stores.database_url, [request_id], timeout=0.5)
    with psycopg.connect(stores.database_url) as conn:
        row = conn.execute(
            "SELECT status, usage_estimated, cost FROM billing_generation WHERE request_id = %s",
            [request_id],
        ).fetchone()
    assert row is not None
    status, estimated, cost = row
    assert (status, estimated) == ("cancelled", True)  # billed for what it delivered
    assert cost > 0
    assert charges(stores, [request_id]) == 1
    balance, ledger = balances(stores, slug)
    assert balance == ledger
