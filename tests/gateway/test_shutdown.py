"""A gateway stopped politely (SIGTERM) closes its upstream pool: under uvicorn (with or
without uvloop, with or without the lifespan protocol) and under Daphne, after plain and
streamed calls, the log holds no "Unclosed client session" nor "Unclosed connector"."""

from __future__ import annotations

import signal
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
