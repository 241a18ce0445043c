"""The provider contract: what an adapter is given, what it gives back, and the shapes both sides
speak. It imports nothing of Momor's, and an adapter imports nothing of Momor's beside it (and
its own package), so every adapter loads and runs without Django, settings or a database.

An adapter is a pure translation between the call (an OpenAI Chat Completions body) and one
provider's API, request and answer, plain and streamed; an adapter whose API serves embeddings
(`Adapter.embeds`) also translates an OpenAI embeddings call and its answer. It holds no state
across calls and does no I/O: routing hands it a `Target` whose credential is ready to send (a
Vertex service account has already been exchanged for a token), and the failover sends what it
prepares."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypedDict, cast
from urllib.parse import quote

import orjson

Json = dict[str, Any]
"""A JSON object read or written as a provider's own API documents it."""

# 4xx statuses that say nothing against the call itself (the key, the rate, the clock): the
# next candidate may well answer.
RETRYABLE_4XX = frozenset({401, 403, 408, 429})

# What one image or file part of the messages can cost, in prompt tokens, on an API whose
# provider documents no figure: the most a documented API charges. An image: OpenAI's
# gpt-4o-mini, 2,833 tokens plus 5,667 for each of at most 8 tiles. A file: a PDF of 100
# pages (OpenAI's and Anthropic's page limit), each page's text (Anthropic: up to 3,000
# tokens) and the page as an image (OpenAI: up to 3,779).
UNDOCUMENTED_IMAGE_TOKENS = 2_833 + 8 * 5_667
UNDOCUMENTED_FILE_TOKENS = 100 * (3_000 + 3_779)

# The input kinds beyond text that Chat Completions carries: image_url, input_audio and file
# parts.
CHAT_COMPLETIONS_INPUTS = frozenset({"image", "audio", "file"})


# Chat Completions shapes (the spec's request, answer and chunk)


class ChatRequest(TypedDict, total=False):
    """The call as the client sent it, routing fields left off: the fields adapters read are
    named here, any other passes through untouched. Every value is the client's, checked where
    it is read."""

    messages: list[Json]
    model: str
    stream: bool
    stream_options: Json
    max_tokens: int
    max_completion_tokens: int
    n: int
    seed: int
    stop: str | list[str]
    temperature: float
    top_p: float
    tools: list[Json]
    tool_choice: str | Json
    parallel_tool_calls: bool
    response_format: Json
    reasoning_effort: str
    reasoning: Json
    include_reasoning: bool
    metadata: dict[str, str]
    service_tier: str
    store: bool
    user: str


class EmbeddingRequest(TypedDict, total=False):
    """The embeddings call as the client sent it, routing fields left off."""

    input: str | list[str] | list[int] | list[list[int]]
    model: str
    dimensions: int
    encoding_format: str
    user: str


@dataclass(frozen=True, slots=True)
class ReasoningAsk:
    """What the call asks of the model's reasoning (`reasoning`, with `reasoning_effort` and
    `include_reasoning` read as its aliases), as each adapter maps it onto its API."""

    effort: str | None = None
    """The depth asked: one of `EFFORTS` in `gateway.providers.reasoning`; "none" turns
    reasoning off where the model allows it."""
    max_tokens: int | None = None
    """A thinking budget in tokens, for the APIs that take one."""
    exclude: bool = False
    """The reasoning stays out of the answer (the model still reasons, and is billed for it)."""

    @property
    def thinks(self) -> bool:
        """Whether the call asks the model to reason (`exclude` alone asks nothing)."""
        return self.max_tokens is not None or self.effort not in (None, "none")


class CompletionUsage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: Json
    completion_tokens_details: Json
    cost: float
    cost_details: Json
    token_count_basis: str
    native_tokens: Json


class Choice(TypedDict, total=False):
    index: int
    message: Json
    logprobs: Json | None
    finish_reason: str | None
    native_finish_reason: str | None


class ChatCompletion(TypedDict, total=False):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    provider: str
    choices: list[Choice]
    usage: CompletionUsage
    momor_metadata: Json
    """Momor's own, on the answer of a call that asked for it (X-Momor-Metadata)."""


class ChunkChoice(TypedDict, total=False):
    index: int
    delta: Json
    logprobs: Json | None
    finish_reason: str | None


class ErrorObject(TypedDict):
    """OpenAI's error object."""

    message: str
    type: str | None
    param: str | None
    code: str | int | None


class ChunkError(TypedDict):
    code: int | str
    message: str


class ChatCompletionChunk(TypedDict, total=False):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    provider: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None
    error: ChunkError
    momor_metadata: Json
    """Momor's own, on the last chunk of a call that asked for it (X-Momor-Metadata)."""


def envelope(choices: list[ChunkChoice]) -> ChatCompletionChunk:
    """A chunk around these choices; id, created and model are written in by the relay."""
    return {
        "id": "",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "",
        "choices": choices,
    }


def error_chunk(
    request_id: str, created: int, model: str, provider: str, code: int | str, message: str
) -> ChatCompletionChunk:
    """The one chunk a stream ends on when it fails after it has shown something."""
    return {
        "id": request_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "provider": provider,
        "error": {"code": code, "message": message},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }


# What an adapter is given


@dataclass(frozen=True, slots=True)
class Target:
    """One offering on one key, as an adapter needs it and no more."""

    base_url: str
    """The provider's (or the region's) base URL, without a trailing slash."""
    secret: str
    """The credential sent upstream, ready to send."""
    model_id: str
    """Momor's id of the model."""
    upstream_id: str
    """The model's id at the provider (a deployment name on Azure)."""
    region: str = ""
    stream: bool = False
    reasoning_efforts: tuple[str, ...] = ()
    momor_key: bool = False
    """Whether the key is Momor's own (resold) rather than the organization's."""
    project: str = ""
    """The cloud project the credential belongs to, where the API names one (Vertex)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event of a provider's stream."""

    data: str
    event: str = ""


# What an adapter gives back


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    url: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Embeddings:
    """An embeddings answer read: one vector per input, in the inputs' order."""

    vectors: list[list[float]]
    prompt_tokens: int | None
    """The provider's count; None when it sent none."""


TOKEN_CEILING = 2**31 - 1
"""The most one token count of a call holds (its column in the records): a provider's larger
count is billed and recorded as this."""
_DIGITS = frozenset("0123456789")


def token_count(value: object) -> int:
    """A token count a provider reported, as Momor bills it: a whole number from 0 to
    TOKEN_CEILING. A negative count is 0, a larger one (infinity included) the ceiling, a
    fraction is rounded up; a string of digits is read; anything else (null, NaN, a word, an
    object) counts 0. A provider's numbers never make a call cost less than nothing, nor a
    count that a record or an encoder cannot hold."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 20 or not _DIGITS.issuperset(text):
            return 0
        value = int(text)
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        value = TOKEN_CEILING if math.isinf(value) else math.ceil(value)
    if not isinstance(value, int):
        return 0
    return min(max(value, 0), TOKEN_CEILING)


def tokens(*counts: object) -> int:
    """Counts a provider reported, added up, within the same bounds."""
    return min(sum(token_count(count) for count in counts), TOKEN_CEILING)


@dataclass(slots=True)
class Usage:
    """Token counts in Chat Completions' terms: prompt includes cache reads and writes,
    completion includes reasoning. `estimated`: counted by Momor, the provider sent none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False

    @classmethod
    def from_openai(cls, raw: object) -> Usage | None:
        if not isinstance(raw, dict):
            return None
        prompt_details = _object(raw.get("prompt_tokens_details"))
        completion_details = _object(raw.get("completion_tokens_details"))
        return cls(
            prompt_tokens=token_count(raw.get("prompt_tokens")),
            completion_tokens=token_count(raw.get("completion_tokens")),
            cached_tokens=token_count(prompt_details.get("cached_tokens")),
            cache_write_tokens=token_count(prompt_details.get("cache_write_tokens")),
            reasoning_tokens=token_count(completion_details.get("reasoning_tokens")),
        )

    def as_openai(self) -> CompletionUsage:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }


@dataclass(slots=True)
class Reply:
    """A plain answer in Chat Completions' shape; `id` and `model` are written over later."""

    body: ChatCompletion
    usage: Usage | None
    finish_reason: str = ""
    native_finish_reason: str = ""


@dataclass(frozen=True, slots=True)
class Failure:
    """A provider's refusal or failure (or a try's, the connection's), with OpenAI's error
    object where one can be given."""

    status: int | None
    message: str
    error: ErrorObject | None = None

    @property
    def openai_shaped(self) -> bool:
        return self.error is not None

    @property
    def moves_on(self) -> bool:
        """Whether the next candidate may be tried. Only a provider's own error object sent
        with a 4xx that is about the call (not the key, the rate or the clock) stops the call:
        every provider would refuse it alike, so it is the call's answer at once."""
        status = self.status or 502
        return not (self.openai_shaped and 400 <= status < 500 and status not in RETRYABLE_4XX)


class CannotCarry(Exception):
    """The call holds content this provider has no way to carry (it moves to the next one)."""


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


class StreamTranslator(ABC):
    """Turns a provider's events into Chat Completions chunks (without id and model)."""

    openai_chunks: ClassVar[bool] = False
    """The provider's events are Chat Completions chunks: one that carries nothing the
    translator reads may be relayed as it was written (`gateway.relay.passthrough`)."""

    def __init__(self) -> None:
        self.state = StreamState()

    @abstractmethod
    def feed(self, event: Event) -> list[ChatCompletionChunk]:
        """The chunks this event makes; raises StreamFailed for an error event."""

    def close(self) -> list[ChatCompletionChunk]:
        """Chunks owed once the upstream stream has ended (none for most protocols)."""
        return []


class Adapter(ABC):
    """One wire protocol."""

    api: ClassVar[str]
    input_kinds: ClassVar[frozenset[str]] = CHAT_COMPLETIONS_INPUTS
    """The input kinds beyond text its API carries (image, audio, file); an offering's own
    declaration narrows them, and routing sends a call only where both take its parts."""

    @abstractmethod
    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        """The upstream request for this call on this target; raises CannotCarry."""

    @abstractmethod
    def reply(self, data: bytes) -> Reply:
        """A plain 2xx answer, translated."""

    @abstractmethod
    def stream(self) -> StreamTranslator:
        """A fresh translator for one streamed answer."""

    def failure(self, status: int, data: bytes) -> Failure:
        """A non-2xx answer; OpenAI's error object when the body holds one."""
        return openai_failure(status, data)

    # What the call can cost on this API: admission reserves the worst case of each target.

    def output_ceiling(self, body: ChatRequest, target: Target) -> int | None:
        """The output ceiling this adapter sends upstream, per answer; None when it sends none
        (the model's own maximum bounds the answer then)."""
        return positive_int(client_ceiling(body))

    def answers(self, body: ChatRequest) -> int:
        """How many answers the provider is asked for (`n`, where the API carries it)."""
        return positive_int(body.get("n")) or 1

    def part_tokens(self, kind: str, target: Target) -> int | None:
        """The most prompt tokens one `image` or `file` part can cost on this API; None for a
        kind whose cost follows its bytes (audio)."""
        return {"image": UNDOCUMENTED_IMAGE_TOKENS, "file": UNDOCUMENTED_FILE_TOKENS}.get(kind)

    # Embeddings (OpenAI's `POST /v1/embeddings`), on the APIs that serve them.

    embeds: ClassVar[bool] = False
    """Whether its API serves embeddings."""

    def prepare_embeddings(self, request: EmbeddingRequest, target: Target) -> UpstreamRequest:
        """The embeddings call as this API takes it; raise CannotCarry for one it cannot carry."""
        raise CannotCarry("this provider's API serves no embeddings")

    def embeddings(self, data: bytes) -> Embeddings:
        """A 2xx embeddings answer read; raise (any exception) when it cannot be read. An API
        that serves none never gets one: its `prepare_embeddings` already refused the call."""
        raise CannotCarry("this provider's API serves no embeddings")


def embedding_inputs(request: EmbeddingRequest) -> list[str] | list[list[int]]:
    """The call's inputs one by one, each embedded on its own: a string or a token array alone
    is one input; a list of strings or of token arrays is that many. Any other value (a number,
    a list that mixes strings and tokens, a token that is not a whole number) cannot be
    carried. An absent input is no input."""
    value = request.get("input")
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise CannotCarry("'input' must be a string, a list of strings or token arrays")
    if value and all(_is_token(item) for item in value):
        return [cast(list[int], value)]
    if all(isinstance(item, str) for item in value):
        return cast(list[str], value)
    if all(isinstance(item, list) and all(_is_token(t) for t in item) for item in value):
        return cast(list[list[int]], value)
    raise CannotCarry("'input' must be a string, a list of strings or token arrays")


def embedding_texts(request: EmbeddingRequest) -> list[str]:
    """The call's inputs as texts, for an API that embeds text alone: token arrays cannot be
    carried there, nor a call with no input."""
    inputs = embedding_inputs(request)
    if not inputs:
        raise CannotCarry("the call has no input to embed")
    if not isinstance(inputs[0], str):
        raise CannotCarry("this provider embeds text, not token arrays")
    return inputs


def _is_token(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def vector(value: object) -> list[float]:
    """One embedding as a provider wrote it in JSON: a non-empty list of numbers (JSON holds
    finite ones alone). Any other value raises ValueError (the answer cannot be read)."""
    if not isinstance(value, list) or not value:
        raise ValueError("an embedding is not a list of numbers")
    out = []
    for number in value:
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise ValueError("an embedding holds a value that is not a number")
        out.append(float(number))
    return out


def chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """A JSON object body as the request it is read as (see ChatRequest)."""
    return cast(ChatRequest, body)


def fields(request: ChatRequest) -> Mapping[str, Any]:
    """The request read by names held in a list, or that ChatRequest does not name."""
    return request


def listed(value: object, name: str) -> list[Any]:
    """A list field of the call as translation reads it: absent (null) as empty; any other
    value that is not a list cannot be carried."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CannotCarry(f"'{name}' must be a list")
    return value


def client_ceiling(body: ChatRequest) -> object:
    """The call's own output ceiling as Chat Completions reads it: max_completion_tokens,
    else max_tokens."""
    ceiling = body.get("max_completion_tokens")
    return body.get("max_tokens") if ceiling is None else ceiling


def _object(value: object) -> Json:
    return value if isinstance(value, dict) else {}


def positive_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def openai_error(error: Mapping[str, Any], message: str) -> ErrorObject:
    return {
        "message": message,
        "type": error.get("type"),
        "param": error.get("param"),
        "code": error.get("code"),
    }


def openai_failure(status: int, data: bytes) -> Failure:
    try:
        parsed = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return Failure(status, error["message"], openai_error(error, error["message"]))
    return Failure(status, f"HTTP {status}")


def segment(value: str) -> str:
    """A value as one segment of a URL's path: every character that could end it or the path
    (`/`, `?`, `#`, `%`...) quoted; an empty value, `.` and `..` refused, since a URL that
    named them would point elsewhere."""
    if value in ("", ".", ".."):
        raise ValueError(f"{value!r} cannot be a segment of a provider's URL")
    return quote(value, safe=":@")  # both stand in a segment as they are (RFC 3986, pchar)


def segments(value: str) -> str:
    """A value that may span segments (a model id like `tunedModels/x`): each one quoted."""
    return "/".join(segment(part) for part in value.split("/"))
