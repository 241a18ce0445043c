"""The routes a call comes in by, one entry per API: its paths, the name its record keeps, how
its body is parsed into the typed call, how the relay's answer and every refusal are written
in its own shape, and where its key is sent. The lean ASGI route and the Django views serve
every entry alike, through `gateway.edge.completion.complete`; below the edge, one path."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from billing.calls.records import Api
from gateway.edge.messages import messages_error, messages_key, messages_shaped
from gateway.edge.responses import responses_shaped
from gateway.relay.attempts import Answer
from gateway.request.call import AskedCall, parse_call, parse_embedding_call
from gateway.request.errors import GatewayError
from gateway.request.messages.call import parse_messages_call
from gateway.request.responses import parse_responses_call

Parser = Callable[[dict[str, Any], bytes, frozenset[str], Mapping[str, str]], AskedCall]
"""The body (a JSON object), its bytes, the deployment's provider names and the call's tag
headers, into the typed call; raises GatewayError for the first thing unreadable."""


def as_relayed(answer: Answer, asked: AskedCall) -> Answer:
    """The relay's answer as it is: the API speaks Chat Completions' (or its own) shape."""
    return answer


def openai_error(exc: GatewayError) -> tuple[int, bytes]:
    """A refusal as OpenAI's error object, with its status."""
    return exc.status, exc.json()


def bearer_key(headers: Mapping[bytes, bytes]) -> str | None:
    """The `Authorization` header, for `authenticate_bearer`."""
    value = headers.get(b"authorization")
    return value.decode("latin-1") if value else None


@dataclass(frozen=True, slots=True)
class Entry:
    api: Api
    paths: frozenset[str]
    parse: Parser
    shaped: Callable[[Answer, AskedCall], Answer] = as_relayed
    """The relay's answer (Chat Completions' shape, plain or streamed) in the API's shape."""
    error: Callable[[GatewayError], tuple[int, bytes]] = openai_error
    """A refusal in the API's shape: its status and JSON body."""
    key: Callable[[Mapping[bytes, bytes]], str | None] = bearer_key
    """The `Authorization` value of a call by its headers (lowercase names): where the API's
    clients send their key, as a Bearer header."""


CHAT = Entry(
    "chat",
    frozenset({"/v1/chat/completions", "/models/completions", "/api/v1/chat/completions"}),
    parse_call,
)
EMBEDDINGS = Entry(
    "embeddings", frozenset({"/v1/embeddings", "/api/v1/embeddings"}), parse_embedding_call
)

MESSAGES = Entry(
    "messages",
    frozenset({"/v1/messages", "/api/v1/messages"}),
    parse_messages_call,
    shaped=messages_shaped,
    error=messages_error,
    key=messages_key,
)
COUNT_TOKENS_PATHS = frozenset({"/v1/messages/count_tokens", "/api/v1/messages/count_tokens"})
"""Messages' token count: no call (nothing generated, recorded or billed), served by its own
view (`gateway.edge.count_tokens`), its body bounded and its refusals shaped as Messages'."""

RESPONSES = Entry(
    "responses",
    frozenset({"/v1/responses", "/api/v1/responses"}),
    parse_responses_call,
    shaped=responses_shaped,
)

ENTRIES: tuple[Entry, ...] = (CHAT, EMBEDDINGS, MESSAGES, RESPONSES)
BY_PATH: dict[str, Entry] = {path: entry for entry in ENTRIES for path in entry.paths}
SHAPE_BY_PATH: dict[str, Entry] = {**BY_PATH, **dict.fromkeys(COUNT_TOKENS_PATHS, MESSAGES)}
"""The entry whose bounds and refusals' shape hold on each path of the calls' routes."""
