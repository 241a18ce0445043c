"""Embedded mode stores its records in a process beside the gateway's (billing.recording.storer):
the gateway serves and journals, its storing process writes the database. Stopped, the storing
process holds no call and the records wait in the journal; killed, under load or between calls,
another takes its place and nothing is lost or stored twice; it ends with its gateway."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from bench.procs import storing_processes
from tests.chaos.books import recorded, wait_recorded
from tests.chaos.conftest import MODEL, UPSTREAM_ID, Stores
from tests.chaos.test_journal import an_org, balances, charges, embedded_gateway, post
from tests.processes import Gateway

pytestmark = pytest.mark.chaos


def the_storing_process(gateway: Gateway, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := storing_processes(gateway.pid):
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"the gateway {gateway.pid} has no storing process")


def gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def test_records_are_stored_by_the_storing_process_not_the_gateway(
    chaos_stores: Stores, tmp_path: Path
) -> None:
    stores = chaos_stores
    slug, key = an_org(stores)
    gateway = embedded_gateway(stores, tmp_path / "journal")
    try:
        assert post(gateway, key).status_code == 200
        storer = the_storing_process(gateway)
        os.kill(storer, signal.SIGSTOP)
        try:
            served = [post(gateway, key, stream=i % 2 == 1) for i in range(6)]
            assert [r.status_code for r in served] == [200] * 6
            ids = [r.headers["x-momor-request-id"] for r in served]
            time.sleep(1.5)  # the replay has sent them, and waits for the stopped process
            assert recorded(stores.database_url, ids) == {}
            assert list((tmp_path / "journal").glob("*.journal"))
        finally:
            os.kill(storer, signal.SIGCONT)
        wait_recorded(stores.database_url, ids, timeout=30)
        assert charges(stores, ids) == 6
        assert the_storing_process(gateway) == storer
    finally:
        gateway.terminate()
    balance, ledger = balances(stores, slug)
    assert balance == ledger


def test_a_storing_process_killed_under_load_loses_and_doubles_nothing(
    chaos_stores: Stores, tmp_path: Path
) -> None:
    stores = chaos_stores
    slug, key = an_org(stores)
    stores.fake.script(UPSTREAM_ID, usage={"prompt_tokens": 12, "completion_tokens": 6})
    # four senders for four seconds: more calls than the default 600 a minute
    unlimited = {"MOMOR_RATE_LIMIT_PER_MINUTE": "1000000"}
    gateway = embedded_gateway(stores, tmp_path / "journal", **unlimited)
    ids: list[str] = []
    statuses: list[int] = []
    done = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=30) as client:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            while not done.is_set():
                answer = client.post(
                    gateway.url + "/v1/chat/completions", json=body,
                    headers={"authorization": f"Bearer {key}"},
                )  # fmt: skip
                statuses.append(answer.status_code)
                ids.append(answer.headers.get("x-momor-request-id", ""))

    try:
        assert post(gateway, key).status_code == 200
        senders = [threading.Thread(target=load) for _ in range(4)]
        for sender in senders:
            sender.start()
        killed = []
        try:
            for _ in range(3):
                time.sleep(1.0)
                storer = the_storing_process(gateway)
                os.kill(storer, signal.SIGKILL)
                killed.append(storer)
                assert gone(storer, 5)
            time.sleep(1.0)
        finally:
            done.set()
            for sender in senders:
                sender.join(30)
        assert set(statuses) == {200}, "a call failed while its storing process was killed"
        assert len(ids) > 20
        wait_recorded(stores.database_url, ids, timeout=60)
        assert set(recorded(stores.database_url, ids).values()) == {1}
        assert charges(stores, ids) == len(ids)
        assert the_storing_process(gateway) not in killed
    finally:
        gateway.terminate()
    balance, ledger = balances(stores, slug)
    assert balance == ledger


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_the_storing_process_ends_with_its_gateway(
    chaos_stores: Stores, tmp_path: Path, stop: signal.Signals
) -> None:
    stores = chaos_stores
    _, key = an_org(stores)
    gateway = embedded_gateway(stores, tmp_path / "journal")
    assert post(gateway, key).status_code == 200
    storer = the_storing_process(gateway)

    gateway.process.send_signal(stop)
    gateway.process.wait(30)

    assert gone(storer, 10), "the storing process outlived its gateway"
