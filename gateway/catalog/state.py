"""The gateway's in-process state (catalog snapshot and identities) and the background task
that keeps it current across processes by polling the database every few seconds."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError
from redis.exceptions import RedisError

from billing.ledger.admission_sync import admission_sync
from core import dbthread
from gateway.catalog.snapshot import Catalog, catalog_build, catalog_fingerprint
from gateway.request.errors import service_unavailable
from gateway.request.identity import Identities

log = logging.getLogger(__name__)

# The fingerprint sees every change made through Django; a change made behind its back (raw
# SQL, a queryset update) is picked up by a full reload this often.
FULL_RELOAD_SECONDS = 60
# Charges whose announcement to admission was lost are found in the ledger this often.
RECONCILE_SECONDS = 30


class GatewayState:
    def __init__(self) -> None:
        self.catalog: Catalog | None = None
        self.identities = Identities()
        self._tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._refreshing = threading.Lock()
        self.paused = False
        self._built_at = time.monotonic()
        self._reconciled_at = time.monotonic()
        # When the in-memory state was last read whole from the database (time.time()).
        self.refreshed_at: float | None = None

    async def ready(self) -> Catalog:
        """The catalog, loaded on first use; starts the refresher on this event loop."""
        self._ensure_refresher()
        if self.catalog is None:
            try:
                self.catalog = await dbthread.lookup(catalog_build)
                self.refreshed_at = time.time()
            except DatabaseError:
                raise service_unavailable("Momor cannot read its catalog right now.") from None
        return self.catalog

    def rebuild_catalog(self) -> None:
        """Build the catalog now, after any refresh under way (used after loading a catalog)."""
        with self._refreshing:
            self.catalog = catalog_build()

    def pause(self) -> None:
        """Stop refreshing, once any refresh under way has ended (tests empty the database)."""
        self.paused = True
        with self._refreshing:
            pass

    def refresh_now(self) -> None:
        """One synchronous refresh of everything (the refresher's tick; tests call it too)."""
        with self._refreshing:
            if not self.paused:
                self._refresh()
                self.refreshed_at = time.time()

    def _refresh(self) -> None:
        self.identities.refresh()
        stale = time.monotonic() - self._built_at > FULL_RELOAD_SECONDS
        if self.catalog is None or stale or catalog_fingerprint() != self.catalog.fingerprint:
            self.catalog = catalog_build()
            self._built_at = time.monotonic()
        if self.identities.orgs:
            reconcile = time.monotonic() - self._reconciled_at > RECONCILE_SECONDS
            try:
                admission_sync(list(self.identities.orgs), reconcile=reconcile)
            except RedisError:
                log.warning("admission sync incomplete: Redis refused a command")
            if reconcile:
                self._reconciled_at = time.monotonic()

    def _ensure_refresher(self) -> None:
        loop = asyncio.get_running_loop()
        task = self._tasks.get(loop)
        if task is None or task.done():
            self._tasks = {lp: t for lp, t in self._tasks.items() if not lp.is_closed()}
            self._tasks[loop] = loop.create_task(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(settings.MOMOR_REFRESH_SECONDS)
            try:
                await dbthread.refresh(self.refresh_now)
            except Exception as exc:  # the refresher must outlive any database outage
                log.warning(
                    "gateway state refresh failed (%s); keeping the last good state",
                    type(exc).__name__,
                )


STATE = GatewayState()
