"""A call parsed once, at the edge: the body read as a JSON object, then its routing fields
and tags checked in the spec's order, and the request the adapters are given. Past
`parse_call` (Chat Completions) and `parse_embedding_call` (embeddings) no code reads the body
as a plain JSON object: routing, admission and the relay take the `AskedCall`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import orjson

from billing.calls.records import Api
from gateway.providers.contract import ChatRequest, EmbeddingRequest, chat_request
from gateway.request.errors import invalid_value
from gateway.request.options import CallOptions, read_options, strip_routing
from gateway.request.tags import CallTags, read_tags

# orjson writes JSON at most this deep: a deeper body parses, but no adapter could send it on.
MAX_DEPTH = 254
# OpenAI's bounds on an embeddings call's input: at most this many inputs, none empty.
MAX_INPUTS = 2048
ENCODINGS = ("float", "base64")


@dataclass(frozen=True, slots=True)
class AskedCall:
    """What a call asks, as read once: how to route it (`options`), what it says about itself
    (`tags`), and its size."""

    options: CallOptions
    tags: CallTags
    size: int
    """The body's length in bytes, as the client sent it."""
    api: ClassVar[Api]
    kind: ClassVar[str]
    """The kind of model that answers it (the catalog's `kind`)."""


@dataclass(frozen=True, slots=True)
class ChatCall(AskedCall):
    """A Chat Completions call; `request` is what goes upstream: the body without the fields
    Momor reads alone."""

    request: ChatRequest
    api: ClassVar[Api] = "chat"
    kind: ClassVar[str] = "chat"


@dataclass(frozen=True, slots=True)
class EmbeddingCall(AskedCall):
    """An embeddings call; `request` is what goes upstream, `inputs` how many vectors it asks."""

    request: EmbeddingRequest
    inputs: int
    base64: bool
    """The vectors go back as base64 (little-endian float32), not as lists of numbers."""
    api: ClassVar[Api] = "embeddings"
    kind: ClassVar[str] = "embedding"


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
    return ChatCall(options, tags, len(raw), chat_request(strip_routing(body)))


def parse_embedding_call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> EmbeddingCall:
    """The embeddings call a JSON object body makes, checked as `parse_call` checks a chat
    call, then its own fields as OpenAI's embeddings API takes them."""
    _check_depth(body, raw)
    options = read_options(body, places)
    if options.stream:
        raise invalid_value("An embeddings call does not stream: leave 'stream' out.")
    tags = read_tags(headers, body)
    inputs = _inputs(body.get("input"))
    _check_dimensions(body.get("dimensions"))
    encoding = body.get("encoding_format", "float")
    if encoding not in ENCODINGS:
        raise invalid_value("'encoding_format' must be float or base64.")
    request = cast(EmbeddingRequest, strip_routing(body))
    return EmbeddingCall(options, tags, len(raw), request, inputs, encoding == "base64")


def _inputs(value: object) -> int:
    """How many vectors `input` asks for: a string, or a list of 1 to 2,048 of one kind
    (strings, or token arrays), or one token array; none empty."""
    if isinstance(value, str):
        if not value:
            raise invalid_value("'input' must not be an empty string.")
        return 1
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_INPUTS:
        raise invalid_value(
            "'input' must be a string, or a list of 1 to "
            f"{MAX_INPUTS:,} strings or token arrays (lists of token ids)."
        )
    if all(_is_token(item) for item in value):
        return 1
    if all(isinstance(item, str) and item for item in value):
        return len(value)
    if all(isinstance(item, list) and item and all(map(_is_token, item)) for item in value):
        return len(value)
    raise invalid_value(
        "'input' must be a string, or a list of non-empty strings, or a list of token ids, "
        "or a list of non-empty lists of token ids."
    )


def _is_token(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_dimensions(value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSIONS:
        raise invalid_value(f"'dimensions' must be a whole number from 1 to {MAX_DIMENSIONS:,}.")


MAX_DIMENSIONS = 65_536


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
