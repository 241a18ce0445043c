"""A gateway stopped politely (SIGTERM) closes its upstream pool: under uvicorn (with or
without uvloop, with or without the lifespan protocol) and under Daphne, after plain and
streamed calls, the log holds no "Unclosed client session" nor "Unclosed connector"."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.billing.conftest import child_env
from tests.gateway.conftest import World
from tests.processes import Gateway

HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}
LEAKS = ("Unclosed client session", "Unclosed connector", "unclosed", "Task was destroyed")


@pytest.mark.parametrize(
    ("server", "transport"),
    [
        ("uvicorn", "aiohttp"),
        ("uvicorn", "httpx"),
        ("uvicorn-uvloop", "aiohttp"),
        ("uvicorn-no-lifespan", "aiohttp"),
        ("daphne", "aiohttp"),
    ],
)
def test_a_stopped_gateway_closes_its_upstream_pool(
    world: World, tmp_path: Path, server: str, transport: str
) -> None:
    log = tmp_path / "gateway.log"
    env = child_env(MOMOR_UPSTREAM_TRANSPORT=transport, MOMOR_SHUTDOWN_GRACE_SECONDS="5")
    env["PYTHONWARNINGS"] = "default"
    gateway = Gateway(env, log, server)
    try:
        gateway.wait_ready()
        headers = {"authorization": f"Bearer {world.key}"}
        url = gateway.url + "/v1/chat/completions"
        for body in (HELLO, {**HELLO, "stream": True}):
            assert httpx.post(url, json=body, headers=headers, timeout=30).status_code == 200
        assert gateway.terminate() in (0, -signal.SIGTERM)
    finally:
        gateway.close()
    output = gateway.output()
    assert not [leak for leak in LEAKS if leak in output], output


@pytest.mark.parametrize("server", ["uvicorn-uvloop", "daphne"])
def test_streams_arriving_through_a_sigterm_are_refused_or_finished_never_cut(
    world: World, tmp_path: Path, server: str
) -> None:
    """Both servers docs/operations.md names drain as a load balancer needs: once the signal comes,
    new connections are refused (the balancer sends them elsewhere) and every stream begun
    ends on [DONE], though calls kept coming all the while."""
    world.fake.script("gpt-5", chunks=20, chunk_delay=0.1)
    env = child_env(MOMOR_SHUTDOWN_GRACE_SECONDS="6")
    gateway = Gateway(env, tmp_path / "gateway.log", server)
    endings: list[str] = []
    streams: list[threading.Thread] = []
    try:
        gateway.wait_ready()
        _warmed(gateway.url, world.key)
        signalled = time.monotonic() + 1.5
        while gateway.process.poll() is None and len(streams) < 300:
            if signalled and time.monotonic() > signalled:
                gateway.process.send_signal(signal.SIGTERM)
                signalled = 0
            stream = threading.Thread(target=_stream_into, args=(gateway.url, world.key, endings))
            stream.start()
            streams.append(stream)
            time.sleep(0.1)
        for stream in streams:
            stream.join(40)
        status = gateway.process.wait(40)
    finally:
        gateway.close()
    assert all(e == "done" or e.startswith("refused") for e in endings), (
        endings,
        gateway.output()[-3000:],
    )
    assert endings.count("done") >= 3, endings
    assert status in (0, -signal.SIGTERM)


def _warmed(url: str, key: str) -> None:
    """Until the gateway has its catalog (loaded on its first calls) and serves a call."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = httpx.post(
            url + "/v1/chat/completions",
            json=HELLO,
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        if answer.status_code == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"the gateway served no call: {answer.text}")


def _stream_into(url: str, key: str, endings: list[str]) -> None:
    """One streamed call: "done" when it ended on [DONE], "refused" when it never started,
    "cut" when it started and did not end."""
    started, last, status = False, "", 0
    try:
        with httpx.stream(
            "POST",
            url + "/v1/chat/completions",
            json={**HELLO, "stream": True},
            headers={"authorization": f"Bearer {key}"},
            timeout=40,
        ) as response:
            status = response.status_code
            started = status == 200
            for line in response.iter_lines():
                last = line or last
    except httpx.HTTPError:
        pass
    if last == "data: [DONE]":
        endings.append("done")
    else:
        endings.append("cut" if started else f"refused {status}")
