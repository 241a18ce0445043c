"""The fake upstream as a pytest plugin: one server subprocess per test session (`fake_upstream`),
reset before each test that asks for `fake`, and `FakeUpstream`, the client of its control API."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
ANNOUNCEMENT = "listening on "


class FakeUpstream:
    """A running fake upstream: its base URL and its `/_fake/...` control calls."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._control = httpx.Client(base_url=url, timeout=10, trust_env=False)

    def script(self, model: str, **behaviour: Any) -> None:
        """Answer calls for `model` as described (keys of `POST /_fake/script`)."""
        response = self._control.post("/_fake/script", json={"model": model, **behaviour})
        if response.status_code == 400:
            raise ValueError(f"the fake upstream refused the script: {response.json()['error']}")
        response.raise_for_status()

    def requests(self, model: str | None = None) -> list[dict[str, Any]]:
        """The calls received since the last reset, oldest first, for `model` or all."""
        params = {} if model is None else {"model": model}
        response = self._control.get("/_fake/requests", params=params)
        response.raise_for_status()
        calls: list[dict[str, Any]] = response.json()
        return calls

    def reset(self) -> None:
        self._control.post("/_fake/reset").raise_for_status()

    def close(self) -> None:
        self._control.close()


def _start() -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "testkit.fake_upstream", "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)  # noqa: S603 - our own fake upstream, argv written here
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(ANNOUNCEMENT):
        _stop(process)
        raise RuntimeError(f"the fake upstream did not start (it printed {line!r})")
    return process, line.removeprefix(ANNOUNCEMENT).strip()


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture(scope="session")
def fake_upstream() -> Iterator[FakeUpstream]:
    process, url = _start()
    upstream = FakeUpstream(url)
    try:
        yield upstream
    finally:
        upstream.close()
        _stop(process)


@pytest.fixture
def fake(fake_upstream: FakeUpstream) -> FakeUpstream:
    fake_upstream.reset()
    return fake_upstream
