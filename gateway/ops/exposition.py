"""The Prometheus exposition: every metric of this process (or, in prometheus-client's
multiprocess mode, of every process writing to PROMETHEUS_MULTIPROC_DIR) and the store figures,
behind the bearer token MOMOR_METRICS_TOKEN when it is set. Served at /metrics on Momor's port,
or, with MOMOR_METRICS_PORT, on a port of its own by a small threaded server."""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from gateway.ops.figures import StoreFigures
from gateway.ops.tally import TALLY

log = logging.getLogger(__name__)

_figures = StoreFigures()


def install() -> None:
    """Read the store figures at each scrape of the default registry."""
    if not multiprocess():
        REGISTRY.register(_figures)


def multiprocess() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def multiprocess_registry() -> CollectorRegistry:
    """A registry of every process's metrics, as their files in PROMETHEUS_MULTIPROC_DIR hold
    them."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus-client's is unannotated
    return registry


def exposition() -> bytes:
    """The scrape's body (blocking: the store figures are read within their bounds). This
    process's tally is added first; another process's, within the second."""
    TALLY.flush()
    if not multiprocess():
        return generate_latest(REGISTRY)
    registry = multiprocess_registry()
    registry.register(_figures)
    return generate_latest(registry)


def authorized(authorization: str | None) -> bool:
    token = settings.MOMOR_METRICS_TOKEN
    if not token:
        return True
    expected = f"Bearer {token}".encode()
    return secrets.compare_digest((authorization or "").encode(), expected)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged."""


def _app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ.get("PATH_INFO") != "/metrics":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not found.\n"]
    if not authorized(environ.get("HTTP_AUTHORIZATION")):
        start_response("401 Unauthorized", [("Content-Type", "text/plain")])
        return [b"A valid metrics token is required.\n"]
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
    return [exposition()]


_server: _Server | None = None


def serve_on_port(port: int, address: str = "") -> None:
    """Serve /metrics on its own port from a thread; a port another process of the same host
    already serves is left to it (logged)."""
    global _server
    if _server is not None:
        return
    try:
        _server = make_server(address, port, _app, server_class=_Server, handler_class=_Quiet)
    except OSError as exc:
        log.warning("metrics port %s not served by this process (%s)", port, exc)
        return
    threading.Thread(target=_server.serve_forever, name="momor-metrics", daemon=True).start()
