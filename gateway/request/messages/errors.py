"""Momor's refusals and failures in Anthropic's error shape: `{"type": "error", "error":
{"type": ..., "message": ...}}`, with the statuses Anthropic documents for each type
(https://docs.claude.com/en/api/errors).

Momor's status picks the type: 400 invalid_request_error, 401 authentication_error, 402
billing_error (Momor's insufficient credits, a key's credit limit), 403 permission_error, 404
not_found_error, 413 request_too_large, 429 rate_limit_error, 529 overloaded_error, any other
4xx invalid_request_error (Anthropic: "We may also use this error type for other 4XX status
codes"), any other 5xx api_error. Momor's 503 (every candidate failed or was unavailable,
Momor cannot check a key or credits) is sent as Anthropic's 529 overloaded_error: Anthropic
documents no 503, and 529 is what its clients read as "temporarily unable to serve, retry"
(Anthropic's SDKs retry it, Claude Code reports it as overloaded); the other statuses stay
Momor's."""

from __future__ import annotations

from typing import Any

import orjson

OVERLOADED = 529
TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    OVERLOADED: "overloaded_error",
}


def anthropic_status(status: int) -> int:
    """The status a refusal is sent with: Momor's own, but 503 as Anthropic's 529."""
    return OVERLOADED if status == 503 else status


def error_type(status: int) -> str:
    """Anthropic's error type for a status Momor answers with."""
    status = anthropic_status(status)
    if status in TYPES:
        return TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def error_json(status: int, message: str) -> tuple[int, bytes]:
    """A refusal as Anthropic writes one: its status and its JSON body."""
    return anthropic_status(status), orjson.dumps(error_body(status, message))


def error_event(status: int, message: str) -> bytes:
    """The `error` event a stream ends on once it has shown something."""
    return b"event: error\ndata: " + orjson.dumps(error_body(status, message)) + b"\n\n"
