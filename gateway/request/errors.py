"""Every refusal and failure of the completions endpoint, as OpenAI's error object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(slots=True)
class GatewayError(Exception):
    """An answer other than success: its HTTP status and OpenAI's error fields."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | int | None = None
    param: str | None = None
    headers: dict[str, str] | None = None
    extra: dict[str, Any] | None = None
    """Fields sent beside `error` (`momor_metadata`)."""

    def body(self) -> dict[str, Any]:
        error = {"message": self.message, "type": self.type, "param": self.param, "code": self.code}
        return {"error": error, **(self.extra or {})}

    def json(self) -> bytes:
        return orjson.dumps(self.body())


EXCERPT_CHARS = 100


def excerpt(value: str, limit: int = EXCERPT_CHARS) -> str:
    """A client's value as an error message or a record quotes it: whole, or its first
    `limit` characters and how many more it had."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value) - limit:,} characters more)"


def invalid_value(message: str, param: str | None = None) -> GatewayError:
    return GatewayError(400, message, code="invalid_value", param=param)


def invalid_api_key(
    message: str = "The API key is missing, revoked, expired or not a Momor key.",
) -> GatewayError:
    return GatewayError(401, message, type="authentication_error", code="invalid_api_key")


def model_not_found(message: str) -> GatewayError:
    return GatewayError(404, message, code="model_not_found")


def request_too_large(limit: int) -> GatewayError:
    size = f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit // 2**10} KiB"
    return GatewayError(413, f"The body is larger than {size}.", code="request_too_large")


def unsupported_media_type() -> GatewayError:
    return GatewayError(415, "The body must be application/json.", code="unsupported_media_type")


def unsupported_parameter(message: str) -> GatewayError:
    return GatewayError(422, message, code="unsupported_parameter")


def service_unavailable(message: str) -> GatewayError:
    return GatewayError(503, message, type="server_error", code="service_unavailable")


def providers_unavailable(
    message: str = "Every candidate failed or was unavailable.",
) -> GatewayError:
    return GatewayError(503, message, type="server_error", code="providers_unavailable")


def internal_error() -> GatewayError:
    return GatewayError(
        500, "Momor failed to handle this call; it has been logged.", type="server_error"
    )
