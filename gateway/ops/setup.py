"""Turn on what the settings ask for (called from the gateway's AppConfig.ready)."""

from __future__ import annotations

from django.conf import settings

from billing.calls.observers import watch
from gateway.ops import calllog, exposition, metrics, tracing


def install() -> None:
    if settings.MOMOR_METRICS:
        metrics.configure()
        exposition.install()
        watch(metrics.observe)
    if settings.MOMOR_LOG_FORMAT == "json":
        watch(calllog.observe)
    tracing.configure_from_environment()
    watch(tracing.TRACER.observe)


def serve_metrics_port() -> None:
    """The metrics port of its own, when configured (called by ASGI processes alone)."""
    if settings.MOMOR_METRICS and settings.MOMOR_METRICS_PORT:
        exposition.serve_on_port(settings.MOMOR_METRICS_PORT, settings.MOMOR_METRICS_ADDRESS)
