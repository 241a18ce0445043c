"""A call leaves nothing for the cycle collector: its objects are freed by reference counting
the moment it ends (momor/collector.py lets the collector run rarely on that promise). Served,
streamed, failed over, refused: none leaves a cycle of Momor's objects behind."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.gateway.calls import (
    ask,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World

PACKAGES = ("gateway", "billing", "accounts", "momor")
ROOT = Path(__file__).resolve().parents[3]
SOURCES = tuple(f"{ROOT / package}/" for package in PACKAGES)


def _momor_garbage() -> list[str]:
    """What the collector found unreachable that Momor's code made: its objects, and the frames
    and coroutines of its functions."""
    found = []
    for thing in gc.garbage:
        module = type(thing).__module__.partition(".")[0]
        code = getattr(thing, "f_code", None) or getattr(thing, "cr_code", None)
        where = code.co_filename if code is not None else ""
        if module in PACKAGES or where.startswith(SOURCES):
            name = code.co_qualname if code is not None else type(thing).__qualname__
            found.append(f"{type(thing).__name__} {name}")
    return found


@pytest.fixture
def cycles(world: World) -> Iterator[Callable[[], list[str]]]:
    """What the calls made after it left for the collector; the gateway warmed up first (its
    first use of each Redis script loads it)."""
    assert world.post(ask()).status_code == 200
    assert world.stream(ask()).status_code == 200
    assert world.post(ask("nobody/here")).status_code == 404
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield lambda: sorted(set((gc.collect(), _momor_garbage())[1]))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_served_plain_call_leaves_no_cycle(world: World, cycles: Callable[[], list[str]]) -> None:
    for _ in range(5):
        assert world.post(ask()).status_code == 200
    assert cycles() == []


def test_a_served_stream_leaves_no_cycle(world: World, cycles: Callable[[], list[str]]) -> None:
    for _ in range(5):
        assert world.stream(ask()).text.endswith("data: [DONE]\n\n")
    assert cycles() == []


def test_a_failed_over_call_leaves_no_cycle(world: World, cycles: Callable[[], list[str]]) -> None:
    for _ in range(3):
        world.fake.script("gpt-5", fail={"status": 503})
        assert world.post(ask()).status_code == 200
    assert cycles() == []


def test_a_refused_call_leaves_no_cycle(world: World, cycles: Callable[[], list[str]]) -> None:
    for _ in range(3):
        assert world.post(ask("nobody/here")).status_code == 404
        assert world.post(ask(provider={"zdr": 1})).status_code == 400
    assert cycles() == []
