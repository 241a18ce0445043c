"""What the gateway hands to billing when a call ends: the call and every attempt, as plain
data (billing never imports the gateway)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import orjson

from billing.admission import RateState, Ticket
from billing.calls.encodable import encodable

Api = Literal["chat", "messages", "responses", "embeddings"]
"""The API a call came in on: Chat Completions, Anthropic Messages, OpenAI Responses or
embeddings."""
APIS: tuple[Api, ...] = get_args(Api)


@dataclass(slots=True)
class TokenCounts:
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    cache_write: int = 0
    reasoning: int = 0
    estimated: bool = False


@dataclass(slots=True)
class AttemptRecord:
    position: int
    model: str
    provider: str
    region: str
    upstream_id: str
    key_source: str
    prices: dict[str, str]
    http_status: int | None = None
    error: str = ""
    latency_ms: int = 0
    first_token_ms: int | None = None
    tokens: TokenCounts | None = None
    offering_id: int = 0
    """The catalog offering tried (0 in records from before it was kept)."""
    fee: str = ""
    """On the organization's own key, the BYOK fee in force when the try was made (empty on
    Momor's key, and in records from before it was kept: those pay the fee in force when
    stored)."""


@dataclass(slots=True)
class CallRecord:
    request_id: str
    organization_id: int
    api_key_id: int | None
    user_id: int | None
    selectors: list[str]
    streamed: bool
    created_at: datetime
    status: str = "failed"
    http_status: int = 200
    error: str = ""
    model: str = ""
    provider: str = ""
    finish_reason: str = ""
    native_finish_reason: str = ""
    tokens: TokenCounts = field(default_factory=TokenCounts)
    latency_ms: int = 0
    first_token_ms: int | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)
    ticket: Ticket | None = None
    client_request_id: str = ""
    """The caller's X-Request-Id, once claimed for this call."""
    session_id: str = ""
    app: str = ""
    """The calling app: its X-Title, else its HTTP-Referer."""
    referer: str = ""
    routing: dict[str, Any] = field(default_factory=dict)
    """The provider filters and order the call set, and why each offering left out was."""
    trace_id: str = ""
    api: Api = "chat"
    """The API called; a record written before it was kept was a Chat Completions call."""


def record_payload(record: CallRecord) -> bytes:
    """The record as one line of JSON, whatever it holds: a value orjson refuses (a lone
    surrogate, an integer past 64 bits, a type it does not know) is made one it takes."""
    try:
        return orjson.dumps(record)
    except orjson.JSONEncodeError:
        return orjson.dumps(encodable(record))


def record_from_payload(data: dict[str, Any]) -> CallRecord:
    fields = dict(data)
    fields["created_at"] = _moment(fields["created_at"])
    fields["tokens"] = TokenCounts(**fields["tokens"])
    fields["attempts"] = [_attempt(a) for a in fields["attempts"]]
    fields["ticket"] = _ticket(fields.get("ticket"))
    return _checked(CallRecord(**fields))


def _checked(record: CallRecord) -> CallRecord:
    """The record, if what storing keys on has its type: a payload whose ids (or API) are of
    another kind (a list for an organization id, say) would fail its whole batch, not just
    itself."""
    text, org = isinstance(record.request_id, str), type(record.organization_id) is int
    if not (text and org and _id(record.api_key_id) and _id(record.user_id)):
        raise TypeError(
            "a record's request id is text and its organization, key and user ids integers"
        )
    if not isinstance(record.api, str):
        raise TypeError("a record's API is text")
    return record


def _moment(text: str) -> datetime:
    """The call's moment; one written without an offset is UTC, as the gateway writes it."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _id(value: object) -> bool:
    return value is None or type(value) is int


def _attempt(data: dict[str, Any]) -> AttemptRecord:
    fields = dict(data)
    fields["tokens"] = TokenCounts(**fields["tokens"]) if fields.get("tokens") else None
    return AttemptRecord(**fields)


def _ticket(data: dict[str, Any] | None) -> Ticket | None:
    if not data:
        return None
    return Ticket(
        id=data["id"],
        org_id=data["org_id"],
        key_tag=data["key_tag"],
        amount=data["amount"],
        rate=RateState(**data["rate"]),
        shared=data.get("shared", True),
        in_doubt=data.get("in_doubt", False),
        meters=tuple(data.get("meters", ())),
    )
