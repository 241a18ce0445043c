"""Under uvicorn (docs/operations.md's command, and its default loop) a whole answer leaves the
gateway in one write, head and body together, and a connection on a socket given by `--fd` sends
with Nagle's algorithm off (momor/under_uvicorn.py): seen by strace on the real server's system
calls. A stream still opens, runs and ends as before on the same server."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.billing.conftest import child_env
from tests.gateway.conftest import World
from tests.processes import Gateway

HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}
WRITES = "write,writev,sendto,sendmsg"
# One traced write call: its thread, the call and its first argument (the descriptor), and the
# bytes as strace shows them.
WRITE = re.compile(r"^\d+\s+(?:write|writev|sendto|sendmsg)\((\d+), (.*)$")
# A connection accepted (its descriptor), and Nagle turned off on a descriptor.
ACCEPTED = re.compile(r"accept4?\(\d+, .*\) = (\d+)$", re.MULTILINE)
NO_DELAY = re.compile(r"setsockopt\((\d+), SOL_TCP, TCP_NODELAY, \[1\], 4\) = 0", re.MULTILINE)


def _traced(pid: int, out: Path, syscalls: str, call: Callable[[], object], until: str) -> str:
    """The process's `syscalls` as strace shows them while `call` ran, called until the trace
    shows `until` (strace attaches to each thread in its own time) or 20 s have passed."""
    argv = ["strace", "-f", "-qq", "-s", "4096", "-e", f"trace={syscalls}", "-o", str(out)]
    tracer = subprocess.Popen([*argv, "-p", str(pid)], stderr=subprocess.DEVNULL)  # noqa: S603 - strace, argv written here
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            call()
            time.sleep(0.2)
            if out.exists() and until in out.read_text():
                break
    finally:
        tracer.terminate()
        tracer.wait(10)
    return out.read_text()


@pytest.mark.skipif(shutil.which("strace") is None, reason="the test command installs strace")
@pytest.mark.parametrize("server", ["uvicorn-uvloop", "uvicorn"])
def test_a_whole_answer_leaves_in_one_write(world: World, tmp_path: Path, server: str) -> None:
    gateway = Gateway(child_env(), tmp_path / "gateway.log", server)
    headers = {"authorization": f"Bearer {world.key}"}
    url = gateway.url + "/v1/chat/completions"
    answers: list[httpx.Response] = []
    try:
        gateway.wait_ready()
        assert httpx.post(url, json=HELLO, headers=headers, timeout=30).status_code == 200
        trace = _traced(
            gateway.pid,
            tmp_path / "writes.txt",
            WRITES,
            lambda: answers.append(httpx.post(url, json=HELLO, headers=headers, timeout=30)),
            until="HTTP/1.1 200",
        )
    finally:
        gateway.close()
    assert {answer.status_code for answer in answers} == {200}, answers[0].text
    writes = [m.group(2) for line in trace.splitlines() if (m := WRITE.match(line))]
    heads = [w for w in writes if w.startswith('"HTTP/1.1 200')]
    assert heads, writes
    for head in heads:  # each with its body
        assert '\\"object\\":\\"chat.completion\\"' in head, head
    assert all(answer.json()["choices"][0]["message"]["content"] for answer in answers)


@pytest.mark.parametrize("server", ["uvicorn-uvloop", "uvicorn"])
def test_a_stream_opens_runs_and_ends_under_uvicorn(
    world: World, tmp_path: Path, server: str
) -> None:
    world.fake.script("gpt-5", chunks=5, chunk_delay=0.05)
    gateway = Gateway(child_env(), tmp_path / "gateway.log", server)
    try:
        gateway.wait_ready()
        headers = {"authorization": f"Bearer {world.key}"}
        body = {**HELLO, "stream": True}
        with httpx.stream(
            "POST", gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=30
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [line for line in response.iter_lines() if line.startswith("data: ")]
    finally:
        gateway.close()
    assert events[-1] == "data: [DONE]"
    assert sum('"content":"' in event for event in events) >= 5, events


@pytest.mark.skipif(shutil.which("strace") is None, reason="the test command installs strace")
@pytest.mark.parametrize("server", ["uvicorn-uvloop", "uvicorn"])
def test_a_connection_on_a_socket_given_by_fd_sends_without_delay(
    world: World, tmp_path: Path, server: str
) -> None:
    """tests.processes.Gateway hands uvicorn its listening socket by `--fd`; each call here
    comes on a connection of its own, which the gateway accepts and turns Nagle off on."""
    gateway = Gateway(child_env(), tmp_path / "gateway.log", server)
    headers = {"authorization": f"Bearer {world.key}"}
    url = gateway.url + "/v1/chat/completions"
    statuses: list[int] = []
    try:
        gateway.wait_ready()
        trace = _traced(
            gateway.pid,
            tmp_path / "accepted.txt",
            "accept,accept4,setsockopt",
            lambda: statuses.append(httpx.post(url, json=HELLO, headers=headers).status_code),
            until="accept",
        )
    finally:
        gateway.close()
    assert set(statuses) == {200}
    accepted = {int(fd) for fd in ACCEPTED.findall(trace)}
    assert accepted, trace
    no_delay = {int(fd) for fd in NO_DELAY.findall(trace)}
    assert accepted <= no_delay, trace
