"""The alerts loop: a thread that checks every organization's rules each
MOMOR_ALERTS_INTERVAL_SECONDS, hands out the deliveries that are due every second, and deletes
what is past the alerts' retention once a day (alerts/retention.py). It runs in each Celery
worker, which hands each try to a worker as the `alerts.deliver` task, and in each gateway
process in embedded mode (no broker), which tries them itself. Nothing of it runs on a call's
path."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from alerts.delivery import Dispatch, attempt, dispatch_due
from alerts.firing import check_all
from alerts.retention import purge

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
PURGE_SECONDS = 24 * 3600.0


def by_worker(delivery_id: int, number: int) -> None:
    from alerts.tasks import deliver

    deliver.delay(delivery_id, number)


def here(delivery_id: int, number: int) -> None:
    attempt(delivery_id, number)


def dispatcher() -> Dispatch:
    """To the workers where there is a broker, else on the loop's own thread."""
    return by_worker if settings.CELERY_BROKER_URL else here


class AlertsLoop:
    def __init__(self, dispatch: Dispatch) -> None:
        self.dispatch = dispatch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="momor-alerts", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        next_check = next_purge = 0.0
        while not self._stop.is_set():
            close_old_connections()
            try:
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + settings.MOMOR_ALERTS_INTERVAL_SECONDS
                    check_all()
                if time.monotonic() >= next_purge:
                    next_purge = time.monotonic() + PURGE_SECONDS
                    purge(timezone.now())
                dispatch_due(self.dispatch)
            except DatabaseError as exc:
                log.warning("alerts check skipped: the database failed (%s)", type(exc).__name__)
            except Exception:
                log.exception("alerts check failed")
            finally:
                close_old_connections()
            self._stop.wait(min(TICK_SECONDS, settings.MOMOR_ALERTS_INTERVAL_SECONDS))


LOOP: AlertsLoop | None = None


def start_in_gateway() -> None:
    """In embedded mode, where no worker runs, the gateway process runs the loop."""
    global LOOP
    if settings.CELERY_BROKER_URL or not settings.MOMOR_ALERTS:
        return
    if LOOP is None:
        LOOP = AlertsLoop(here)
    LOOP.start()
