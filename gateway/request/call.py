"""A Chat Completions call parsed once, at the edge: the body read as a JSON object, then
its routing fields and tags checked in the spec's order, and the request the adapters are
given. Past `parse_call` no code reads the body as a plain JSON object: routing, admission
and the relay take the `ChatCall`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.providers.contract import ChatRequest, chat_request
from gateway.request.errors import invalid_value
from gateway.request.options import CallOptions, read_options, strip_routing
from gateway.request.tags import CallTags, read_tags

# orjson writes JSON at most this deep: a deeper body parses, but no adapter could send it on.
MAX_DEPTH = 254


@dataclass(frozen=True, slots=True)
class ChatCall:
    """What a call asks, as read once: how to route it and hold its answer (`options`), what it
    says about itself (`tags`), and what goes upstream (`request`, the body without the fields
    Momor reads alone)."""

    request: ChatRequest
    options: CallOptions
    tags: CallTags
    size: int
    """The body's length in bytes, as the client sent it."""


def json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object; 400 when it is not one."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise invalid_value("The body is not a JSON object: it does not parse as JSON.") from None
    if not isinstance(body, dict):
        raise invalid_value("The body is not a JSON object.")
    return body


def parse_call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> ChatCall:
    """The call a JSON object body makes, checked (its depth, routing fields, then tags from
    `headers`, by lowercase name); raise GatewayError(400) for the first thing unreadable.
    `places`: the provider names this deployment serves."""
    _check_depth(body, raw)
    options = read_options(body, places)
    tags = read_tags(headers, body)
    return ChatCall(chat_request(strip_routing(body)), options, tags, len(raw))


def _check_depth(body: dict[str, Any], raw: bytes) -> None:
    """Refuse a body nested deeper than Momor can send on; a body with fewer brackets than
    that cannot be, so only the rare one with many is encoded to find out."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    try:
        orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise invalid_value(
            f"The body nests arrays and objects more than {MAX_DEPTH} levels deep; "
            "Momor cannot send it on."
        ) from None
