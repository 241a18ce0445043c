"""The adapter contract: one adapter per wire protocol, each a pure translation between the
call (an OpenAI Chat Completions body) and one provider's API, request and answer, plain and
streamed. Adapters hold no state across calls and do no routing, billing or I/O of their own
beyond what `prepare` needs to authenticate."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from gateway.options import CallOptions
from gateway.routing import Candidate
from gateway.snapshot import OfferingInfo
from gateway.sse import Event

# What one image or file part of the messages can cost, in prompt tokens, on an API whose
# provider documents no figure: the most a documented API charges. An image: OpenAI's
# gpt-4o-mini, 2,833 tokens plus 5,667 for each of at most 8 tiles. A file: a PDF of 100
# pages (OpenAI's and Anthropic's page limit), each page's text (Anthropic: up to 3,000
# tokens) and the page as an image (OpenAI: up to 3,779).
UNDOCUMENTED_IMAGE_TOKENS = 2_833 + 8 * 5_667
UNDOCUMENTED_FILE_TOKENS = 100 * (3_000 + 3_779)


@dataclass(slots=True)
class UpstreamRequest:
    """One request to a provider. `secrets` names the credentials it carries beyond the
    candidate's key (an access token made from it): failures are scrubbed of them."""

    url: str
    headers: dict[str, str]
    body: bytes
    secrets: tuple[str, ...] = ()


@dataclass(slots=True)
class Usage:
    """Token counts in Chat Completions' terms: prompt includes cache reads and writes,
    completion includes reasoning."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @classmethod
    def from_openai(cls, raw: object) -> Usage | None:
        if not isinstance(raw, dict):
            return None
        prompt_details = raw.get("prompt_tokens_details") or {}
        completion_details = raw.get("completion_tokens_details") or {}
        return cls(
            prompt_tokens=int(raw.get("prompt_tokens") or 0),
            completion_tokens=int(raw.get("completion_tokens") or 0),
            cached_tokens=int(prompt_details.get("cached_tokens") or 0),
            cache_write_tokens=int(prompt_details.get("cache_write_tokens") or 0),
            reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        )

    def as_openai(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }


@dataclass(slots=True)
class Reply:
    """A plain answer in Chat Completions' shape; `id` and `model` are written over later."""

    body: dict[str, Any]
    usage: Usage | None
    finish_reason: str = ""
    native_finish_reason: str = ""


@dataclass(slots=True)
class Failure:
    """A provider's refusal or failure, with OpenAI's error object where one can be given."""

    status: int | None
    message: str
    error: dict[str, Any] | None = None

    @property
    def openai_shaped(self) -> bool:
        return self.error is not None


class CannotCarry(Exception):
    """The call holds content this provider has no way to carry (it moves to the next one)."""


def listed(value: object, name: str) -> list[Any]:
    """A list field of the call as translation reads it: absent (null) as empty; any other
    value that is not a list cannot be carried."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CannotCarry(f"'{name}' must be a list")
    return value


class PrepareFailed(Exception):
    """The upstream request could not be made (a credential exchange failed, for instance): the
    try fails with this failure and the call moves on."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class StreamFailed(Exception):
    """The provider's stream reported an error, or ended before its answer did."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(slots=True)
class StreamState:
    usage: Usage | None = None
    finish_reason: str = ""
    native_finish_reason: str = ""
    finished: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class StreamTranslator(ABC):
    """Turns a provider's events into Chat Completions chunks (without id and model)."""

    def __init__(self) -> None:
        self.state = StreamState()

    @abstractmethod
    def feed(self, event: Event) -> list[dict[str, Any]]:
        """The chunks this event makes; raises StreamFailed for an error event."""

    def close(self) -> list[dict[str, Any]]:
        """Chunks owed once the upstream stream has ended (none for most protocols)."""
        return []


class Adapter(ABC):
    """One wire protocol."""

    api: ClassVar[str]

    @abstractmethod
    async def prepare(
        self, body: dict[str, Any], options: CallOptions, candidate: Candidate
    ) -> UpstreamRequest:
        """The upstream request for this call on this offering; raises CannotCarry, or
        PrepareFailed when the request cannot be authenticated."""

    @abstractmethod
    def reply(self, data: bytes) -> Reply:
        """A plain 2xx answer, translated."""

    @abstractmethod
    def stream(self, options: CallOptions) -> StreamTranslator:
        """A fresh translator for one streamed answer."""

    def failure(self, status: int, data: bytes) -> Failure:
        """A non-2xx answer; OpenAI's error object when the body holds one."""
        return openai_failure(status, data)

    # What the call can cost on this API: admission reserves the worst case of each candidate.

    def output_ceiling(self, body: dict[str, Any], offering: OfferingInfo) -> int | None:
        """The output ceiling this adapter sends upstream, per answer; None when it sends none
        (the model's own maximum bounds the answer then)."""
        return positive_int(client_ceiling(body))

    def answers(self, body: dict[str, Any]) -> int:
        """How many answers the provider is asked for (`n`, where the API carries it)."""
        return positive_int(body.get("n")) or 1

    def part_tokens(self, kind: str, offering: OfferingInfo) -> int | None:
        """The most prompt tokens one `image` or `file` part can cost on this API; None for a
        kind whose cost follows its bytes (audio)."""
        return {"image": UNDOCUMENTED_IMAGE_TOKENS, "file": UNDOCUMENTED_FILE_TOKENS}.get(kind)


def client_ceiling(body: dict[str, Any]) -> object:
    """The call's own output ceiling as Chat Completions reads it: max_completion_tokens,
    else max_tokens."""
    ceiling = body.get("max_completion_tokens")
    return body.get("max_tokens") if ceiling is None else ceiling


def positive_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def openai_failure(status: int, data: bytes) -> Failure:
    try:
        parsed = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        shaped = {
            "message": error["message"],
            "type": error.get("type"),
            "param": error.get("param"),
            "code": error.get("code"),
        }
        return Failure(status, error["message"], shaped)
    return Failure(status, f"HTTP {status}")
