"""The Messages route's own edge (`gateway.edge.entries.MESSAGES`): where its clients send their
key, how its refusals are written, and its answer in Messages' shape.

- The key: `x-api-key` (Anthropic's SDK, Claude Code with ANTHROPIC_API_KEY), else
  `Authorization: Bearer` (Claude Code with ANTHROPIC_AUTH_TOKEN).
- A refusal: Anthropic's error object with Anthropic's status for its type
  (`gateway.request.messages.errors`).
- The answer: as Anthropic wrote it where Anthropic served the call (`Answer.native`), else the
  relay's Chat Completions answer written as a Messages answer (`gateway.relay.messages.message`)
  or its stream as Messages events (`gateway.relay.messages.events`)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.relay.attempts import Answer
from gateway.relay.messages.events import MessagesStream
from gateway.relay.messages.message import messages_answer_bytes
from gateway.request.call import AskedCall
from gateway.request.errors import GatewayError
from gateway.request.messages.errors import error_json


def messages_key(headers: Mapping[bytes, bytes]) -> str | None:
    """The key as a Bearer `Authorization` value: `x-api-key`, else `Authorization`."""
    key = headers.get(b"x-api-key")
    if key:
        return "Bearer " + key.decode("latin-1").strip()
    value = headers.get(b"authorization")
    return value.decode("latin-1") if value else None


def messages_error(exc: GatewayError) -> tuple[int, bytes]:
    return error_json(exc.status, exc.message)


def messages_shaped(answer: Answer, asked: AskedCall) -> Answer:
    if answer.native:
        return answer
    if isinstance(answer.body, bytes):
        answer.body = messages_answer_bytes(answer.body)
    else:
        answer.body = MessagesStream(answer.body)
    return answer
