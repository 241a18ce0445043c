"""Who is told of each finished call: the apps above billing (the gateway's metrics, call log
and traces) register an observer, and `record_call` tells each of them once per call, after
its hand-off, with what the hand-off knew. One hook for all of them, so a call pays for the
figures it produces and nothing else; billing itself knows nothing of what they do."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from billing.calls.records import CallRecord

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class HandedOff:
    """A finished call as billing handed it off: its record, its charge in nano-dollars, and
    when the hand-off began and ended (`time.time()` seconds)."""

    record: CallRecord
    cost_units: int
    began: float
    ended: float


Observer = Callable[[HandedOff], None]

_observers: list[Observer] = []


def watch(observer: Observer) -> None:
    """Tell `observer` of every call this process hands off from now on."""
    if observer not in _observers:
        _observers.append(observer)


def unwatch(observer: Observer) -> None:
    if observer in _observers:
        _observers.remove(observer)


def notify(handed: HandedOff) -> None:
    """Tell every observer; one that fails is logged and never costs the call anything."""
    for observer in _observers:
        try:
            observer(handed)
        except Exception:
            log.exception("an observer of call %s failed", handed.record.request_id)
