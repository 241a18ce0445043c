"""The four APIs as the chaos load speaks them: each one's route, where its clients send the key,
a call's body, where its answer carries its id (Momor's request id, prefixed), what shows that
content reached the client, and how a stream's last event reads when it ended whole or on its
one error; and the kinds of call a load is made of."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.chaos.conftest import CLAUDE, ECHO, EMBED, GPT

HI = [{"role": "user", "content": "hi"}]


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def anthropic_key(key: str) -> dict[str, str]:
    return {"x-api-key": key, "anthropic-version": "2023-06-01"}


@dataclass(frozen=True, eq=False)
class Api:
    name: str
    """The `api` its calls' records keep."""
    path: str
    headers: Callable[[str], dict[str, str]]
    asked: dict[str, Any]
    """A call's body but for its model and `stream`."""
    shown: re.Pattern[bytes]
    ended: re.Pattern[bytes]
    """The last event of a stream that ended, whole or on its error."""
    id_prefix: str | None = None
    """The answer's id is this and the request id; None: its answers carry no id."""
    id_under: str | None = None
    """The key of the object that holds the id in a stream's first event."""

    def id_of(self, first: dict[str, Any]) -> str | None:
        """The id in a plain answer or in a stream's first event."""
        holder = first.get(self.id_under, first) if self.id_under else first
        found = holder.get("id") if isinstance(holder, dict) else None
        return found if isinstance(found, str) else None


CHAT = Api(
    "chat", "/v1/chat/completions", bearer, {"messages": HI},
    shown=re.compile(rb'"content":"[^"]'),
    ended=re.compile(rb'data: (\[DONE\]|\{.*"finish_reason":"error")', re.DOTALL),
    id_prefix="",
)  # fmt: skip
MESSAGES = Api(
    "messages", "/v1/messages", anthropic_key, {"max_tokens": 64, "messages": HI},
    shown=re.compile(rb'"text":"[^"]'),
    ended=re.compile(rb"event: (message_stop|error)\n"),
    id_prefix="msg_", id_under="message",
)  # fmt: skip
RESPONSES = Api(
    "responses", "/v1/responses", bearer, {"input": "hi"},
    shown=re.compile(rb'"(delta|text)":"[^"]'),
    ended=re.compile(rb"event: response\.(completed|incomplete|failed)\n"),
    id_prefix="resp_", id_under="response",
)  # fmt: skip
EMBEDDINGS = Api(
    "embeddings", "/v1/embeddings", bearer, {"input": ["one two", "three"]},
    shown=re.compile(rb'"embedding":\['),
    ended=re.compile(rb"(?!)"),  # it never streams
)  # fmt: skip


@dataclass(frozen=True)
class Kind:
    """One kind of call: an API on a model, plain or streamed."""

    api: Api
    model: str
    streamed: bool = False

    def body(self) -> dict[str, Any]:
        streamed = {"stream": True} if self.streamed else {}
        return {"model": self.model, **self.api.asked, **streamed}


def plain_and_streamed(api: Api, model: str) -> tuple[Kind, Kind]:
    return Kind(api, model), Kind(api, model, streamed=True)


CHAT_ONLY = plain_and_streamed(CHAT, ECHO.model)
MIX = (
    *CHAT_ONLY,
    *plain_and_streamed(MESSAGES, CLAUDE.model),  # natively on Anthropic
    *plain_and_streamed(MESSAGES, ECHO.model),  # translated for a Chat Completions provider
    *plain_and_streamed(RESPONSES, GPT.model),  # natively on OpenAI
    *plain_and_streamed(RESPONSES, ECHO.model),  # translated
    Kind(EMBEDDINGS, EMBED.model),
)
"""Every API, on every way the gateway serves it."""
