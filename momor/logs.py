"""Logging without secrets: a filter on every handler masks keys in each record (Momor's
`sk-momor-...` keys, every provider key this process knows, Bearer tokens, URL passwords; see
`core.redaction`), and Django's error reports (the admins' mail, the debug page) mask them
in frame variables and request data too. A message or argument longer than `TEXT_MAX`
characters (a traceback or stack longer than `TRACE_MAX`) keeps its first and last halves of
that, so the work a record costs is bounded whatever a client sent (a 40,000-character URL in
the ASGI server's access line).

`configure` is LOGGING_CONFIG: it applies LOGGING, then puts the filter on handlers configured
outside it (the ASGI server's own); Celery's are given it in `momor.celery`. With
MOMOR_LOG_FORMAT=json every such handler also writes JSON lines (`JsonLines`)."""

from __future__ import annotations

import logging
import logging.config
from collections.abc import ItemsView
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.views.debug import SafeExceptionReporterFilter
from pythonjsonlogger.orjson import OrjsonFormatter

from accounts.link_tokens import mask_link_tokens
from core.redaction import scrub, scrub_bounded

_PLAIN = (int, float, bool, type(None))
TEXT_MAX = 8 * 1024
TRACE_MAX = 32 * 1024


class ScrubSecrets(logging.Filter):
    """Masks secrets in a record's message, arguments, exception text and stack."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _scrubbed(record.msg)
        record.args = _scrubbed_args(record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_bounded(record.exc_text, TRACE_MAX)
        if record.stack_info:
            record.stack_info = scrub_bounded(record.stack_info, TRACE_MAX)
        return True


def _scrubbed_args(args: Any) -> Any:
    if isinstance(args, tuple):
        return tuple(_scrubbed(arg) for arg in args)
    if isinstance(args, dict):
        return {key: _scrubbed(value) for key, value in args.items()}
    return args


def _scrubbed(value: object) -> object:
    """The value itself unless its text holds a secret (formatters may need its type)."""
    if isinstance(value, _PLAIN):
        return value
    try:
        text = str(value)
    except Exception:  # the handler meets it too, and logging reports that without raising
        return value
    clean = mask_link_tokens(scrub_bounded(text, TEXT_MAX))  # links' tokens: access lines
    return value if clean == text else clean


class JsonLines(OrjsonFormatter):
    """One JSON object per line: time, level, logger, message and the record's extra fields
    (a call's line carries its request id, organization, model, provider, status and
    latency), encoded with orjson."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            timestamp=False,
        )


def install() -> None:
    """Put the filter (and, for JSON logs, the JSON formatter) on every handler of every
    logger configured so far."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    json_lines = getattr(settings, "MOMOR_LOG_FORMAT", "plain") == "json"
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if not any(isinstance(f, ScrubSecrets) for f in handler.filters):
                handler.addFilter(ScrubSecrets())
            if json_lines and not isinstance(handler.formatter, JsonLines):
                handler.setFormatter(JsonLines())


def configure(config: dict[str, Any]) -> None:
    logging.config.dictConfig(config)
    install()


class ScrubbingReporterFilter(SafeExceptionReporterFilter):
    """Django's error reports, with every value that holds a secret masked as a whole."""

    def get_traceback_frame_variables(
        self, request: HttpRequest | None, tb_frame: Any
    ) -> ItemsView[str, Any]:
        found = super().get_traceback_frame_variables(request, tb_frame)
        return {name: self._masked(value) for name, value in found}.items()

    def get_post_parameters(self, request: HttpRequest | None) -> Any:
        params = super().get_post_parameters(request)
        if hasattr(params, "items"):
            params = params.copy()
            for key, value in list(params.items()):
                params[key] = self._masked(value)
        return params

    def _masked(self, value: Any) -> Any:
        try:
            text = repr(value)
        except Exception as exc:  # a model's repr that queries a database gone loses no report
            return f"<{type(value).__name__}: its repr failed ({type(exc).__name__})>"
        return value if scrub(text) == text else self.cleansed_substitute
