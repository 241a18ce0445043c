"""A Messages call read once: its body checked (`checks`), its routing fields and tags read as a
chat call's are (`gateway.request.call.parse_call`, on the Chat Completions request the body
translates into), and the body as written kept for Anthropic's offerings.

Momor's routing fields (`model`, `models`, `provider`, `session_id`) may ride in the body
beside Anthropic's; they are read by Momor and never sent on. Anthropic's `anthropic-version`
and `anthropic-beta` headers are kept to be forwarded with the body."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from billing.calls.records import Api
from gateway.providers.contract import Json
from gateway.request.call import ChatCall, parse_call
from gateway.request.messages.checks import check_body
from gateway.request.messages.to_chat import chat_request
from gateway.request.options import ROUTING_FIELDS, strip_routing

FORWARDED = ("anthropic-version", "anthropic-beta")


@dataclass(frozen=True, slots=True)
class MessagesCall(ChatCall):
    """A Messages call. `request` (the Chat Completions request it translates into) goes to
    every offering but Anthropic's, which are sent `native`."""

    native: Json
    """The body as the client wrote it, without Momor's fields (`model` is written per
    offering)."""
    forwarded: dict[str, str]
    """Anthropic's headers the client sent (`anthropic-version`, `anthropic-beta`), by
    lowercase name."""
    uncarried: str
    """What of the call Chat Completions cannot carry (only Anthropic's offerings can then
    serve it); empty when it carries it all."""
    api: ClassVar[Api] = "messages"


def parse_messages_call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> MessagesCall:
    """A `POST /v1/messages` body; raises GatewayError(400) for the first thing unreadable."""
    check_body(body)
    return _call(body, raw, places, headers)


def parse_count_call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> MessagesCall:
    """A `POST /v1/messages/count_tokens` body: a Messages body without `max_tokens`."""
    check_body(body, counting=True)
    return _call(body, raw, places, headers)


def _call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> MessagesCall:
    translated = chat_request(body)
    routing = {name: body[name] for name in ROUTING_FIELDS if name in body}
    chat = parse_call({**translated.request, **routing}, raw, places, headers)
    return MessagesCall(
        chat.options,
        chat.tags,
        chat.size,
        chat.request,
        native=strip_routing(body),
        forwarded={name: headers[name] for name in FORWARDED if headers.get(name)},
        uncarried=translated.uncarried,
    )
