"""What a call says about itself beside its routing: its X-Request-Id, its session
(X-Session-Id, or the body's session_id, which wins) and the app calling (X-Title,
HTTP-Referer). Each is checked for length; a longer one is refused with 400."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.request.errors import invalid_value

TAG_HEADERS = (
    "x-request-id",
    "x-session-id",
    "http-referer",
    "x-title",
    "x-momor-metadata",
    # Read by the Messages route: Anthropic's API version and betas, forwarded to Anthropic.
    "anthropic-version",
    "anthropic-beta",
)
REQUEST_ID_MAX, SESSION_MAX, REFERER_MAX, TITLE_MAX = 128, 256, 2048, 256


@dataclass(frozen=True, slots=True)
class CallTags:
    request_id: str = ""
    session_id: str = ""
    referer: str = ""
    title: str = ""

    @property
    def app(self) -> str:
        return self.title or self.referer


NO_TAGS = CallTags()


def read_tags(headers: Mapping[str, str], body: dict[str, Any]) -> CallTags:
    """The call's tags from its headers (names in lowercase) and body."""
    return CallTags(
        request_id=_bounded("X-Request-Id", headers.get("x-request-id"), 1, REQUEST_ID_MAX),
        session_id=_session(headers, body),
        referer=_bounded("HTTP-Referer", headers.get("http-referer"), 0, REFERER_MAX),
        title=_bounded("X-Title", headers.get("x-title"), 0, TITLE_MAX),
    )


def tag_headers(pairs: Mapping[str, str]) -> dict[str, str]:
    """The tag headers of a request (Django's), by lowercase name; read as UTF-8."""
    found: dict[str, str] = {}
    for name, value in pairs.items():
        key = name.lower()
        if key in TAG_HEADERS:
            found[key] = value.encode("latin-1", "replace").decode("utf-8", "replace")
    return found


def tags_of(headers: dict[bytes, bytes]) -> dict[str, str]:
    """`tag_headers` of an ASGI request's headers, by (lowercase) name."""
    return {
        name: headers[raw].decode("utf-8", "replace")
        for name, raw in _TAG_HEADER_BYTES
        if raw in headers
    }


_TAG_HEADER_BYTES = tuple((name, name.encode()) for name in TAG_HEADERS)


def _session(headers: Mapping[str, str], body: dict[str, Any]) -> str:
    if "session_id" in body and body["session_id"] is not None:
        value = body["session_id"]
        if not isinstance(value, str) or not 1 <= len(value) <= SESSION_MAX:
            raise invalid_value(f"'session_id' must be a string of 1 to {SESSION_MAX} characters")
        return value
    return _bounded("X-Session-Id", headers.get("x-session-id"), 1, SESSION_MAX)


def _bounded(name: str, value: str | None, least: int, most: int) -> str:
    if value is None:
        return ""
    if not least <= len(value) <= most:
        raise invalid_value(f"The {name} header must be {least} to {most} characters long.")
    return value
