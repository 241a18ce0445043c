"""Providers that speak Chat Completions: OpenAI, Azure OpenAI, Mistral, DeepInfra and any
OpenAI-compatible server. The body goes through as the client wrote it but for the changes the
spec lists under "What Momor changes on the way"; the answer comes back as the provider wrote it,
its reasoning as `reasoning`.

Embeddings (`POST {base_url}/embeddings`, each of them): the call goes as the client wrote it
but for `model`, the target's upstream id (on Azure the deployment name, on its v1 API as chat
goes: the base URL ends in `/openai/v1` and the key rides in `api-key`). The answer's `data[]`
is read by `index`, each `embedding` a list of floats or, where the provider was asked for
`base64`, little-endian float32 decoded to floats; `usage.prompt_tokens` is the count.

- OpenAI and Azure are sent `encoding_format` as the client asked: base64 (what OpenAI's own
  SDK asks for) is smaller on the wire and decodes to the very float32 values the model made.
- Mistral, DeepInfra and compatible servers are always asked for floats (`encoding_format`
  left off, float being every one's default), since base64 is not taken alike everywhere: the
  relay encodes the floats back to base64 for a client that asked for it.
- Mistral takes text alone (`input` a string or a list of strings: token arrays cannot be
  carried there), names the dimensions `output_dimension`, and is sent no `user`.

Reference: https://platform.openai.com/docs/api-reference/embeddings,
https://docs.mistral.ai/api/endpoint/embeddings"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import ClassVar, cast

import orjson

from gateway.providers.contract import (
    Adapter,
    ChatCompletion,
    ChatCompletionChunk,
    ChatRequest,
    EmbeddingRequest,
    Embeddings,
    Event,
    Failure,
    Json,
    Reply,
    StreamFailed,
    StreamTranslator,
    Target,
    UpstreamRequest,
    Usage,
    embedding_texts,
    fields,
    openai_error,
    openai_failure,
    token_count,
    vector,
)
from gateway.providers.reasoning import (
    ALIASES,
    answered_reasoning,
    effort_for,
    effort_of,
    move_reasoning_back,
    reasoning_asked,
)
from gateway.providers.responses.native import upstream_body
from gateway.providers.responses.wire import ResponsesRequest

# OpenAI's vision pricing (platform.openai.com/docs/guides/images-vision, "Calculating
# costs"): a patch model counts at most 1,536 patches times its multiplier (2.46 for the nano
# models: 3,779 tokens), a tile model at most 8 tiles (gpt-4o: 85 + 8 x 170 = 1,445), and
# gpt-4o-mini 2,833 + 8 x 5,667 = 48,169. A PDF goes as each page's text and image, up to
# 100 pages.
IMAGE_TOKENS = 3_779
MINI_IMAGE_TOKENS = 2_833 + 8 * 5_667
PAGES = 100
PAGE_TEXT_TOKENS = 3_000


class OpenAIAdapter(Adapter):
    api: ClassVar[str] = "openai"
    max_tokens_field: ClassVar[str] = "max_completion_tokens"
    seed_field: ClassVar[str] = "seed"
    takes_stream_options: ClassVar[bool] = True
    reasoning_input_field: ClassVar[str | None] = None
    embeds: ClassVar[bool] = True
    takes_base64: ClassVar[bool] = True
    """Whether the provider is sent the client's `encoding_format` (else it is asked for
    floats, its default)."""
    speaks_responses: ClassVar[bool] = True
    """Whether the provider serves OpenAI's Responses API (`POST {base_url}/responses`): a
    Responses call goes to it as written (`gateway.providers.responses.native`), not
    translated into Chat Completions."""

    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        return UpstreamRequest(
            url=f"{target.base_url}/chat/completions",
            headers=self.auth_headers(target.secret),
            body=orjson.dumps(self.body(body, target)),
        )

    def auth_headers(self, secret: str) -> dict[str, str]:
        return {"authorization": f"Bearer {secret}", "content-type": "application/json"}

    def body(self, body: ChatRequest, target: Target) -> Json:
        out = dict(fields(body))
        out["model"] = target.upstream_id
        self._ceiling(out)
        if "seed" in out and self.seed_field != "seed":
            out[self.seed_field] = out.pop("seed")
        if target.stream:
            self._stream_options(out)
        if any(name in out for name in ALIASES):
            self._effort(out, target.reasoning_efforts)
        if isinstance(out.get("messages"), list):
            out["messages"] = move_reasoning_back(out["messages"], self.reasoning_input_field)
        return out

    def _ceiling(self, out: Json) -> None:
        ceiling = out.pop("max_completion_tokens", None)
        fallback = out.pop("max_tokens", None)
        value = ceiling if ceiling is not None else fallback
        if value is not None:
            out[self.max_tokens_field] = value

    def _stream_options(self, out: Json) -> None:
        if not self.takes_stream_options:
            out.pop("stream_options", None)
            return
        current = out.get("stream_options")
        merged = dict(current) if isinstance(current, dict) else {}
        merged["include_usage"] = True
        out["stream_options"] = merged

    def _effort(self, out: Json, efforts: tuple[str, ...]) -> None:
        """The call's reasoning as the one field Chat Completions reads, `reasoning_effort`:
        the effort asked (or the one its budget stands for) as the offering takes it."""
        ask = reasoning_asked(out)
        for name in ALIASES:
            out.pop(name, None)
        effort = effort_for(effort_of(ask), efforts) if ask is not None else None
        if effort is not None:
            out["reasoning_effort"] = effort

    def reply(self, data: bytes) -> Reply:
        body = orjson.loads(data)
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            raise ValueError("the provider's answer is not a chat completion")
        finish = ""
        for choice in body["choices"]:
            if isinstance(choice, dict):
                message = choice.get("message")
                if isinstance(message, dict):
                    answered_reasoning(message)
                finish = finish or str(choice.get("finish_reason") or "")
        usage = Usage.from_openai(body.get("usage"))
        return Reply(cast(ChatCompletion, body), usage, finish, finish)

    def stream(self) -> StreamTranslator:
        return ChunkRelay()

    def failure(self, status: int, data: bytes) -> Failure:
        return openai_failure(status, data)

    def part_tokens(self, kind: str, target: Target) -> int | None:
        image = MINI_IMAGE_TOKENS if target.model_id.endswith("gpt-4o-mini") else IMAGE_TOKENS
        return {"image": image, "file": PAGES * (PAGE_TEXT_TOKENS + image)}.get(kind)

    def prepare_embeddings(self, request: EmbeddingRequest, target: Target) -> UpstreamRequest:
        return UpstreamRequest(
            url=f"{target.base_url}/embeddings",
            headers=self.auth_headers(target.secret),
            body=orjson.dumps(self.embeddings_body(request, target)),
        )

    def embeddings_body(self, request: EmbeddingRequest, target: Target) -> Json:
        out = dict(request)
        out["model"] = target.upstream_id
        if not self.takes_base64:
            out.pop("encoding_format", None)
        return out

    def embeddings(self, data: bytes) -> Embeddings:
        return openai_embeddings(data)

    def prepare_responses(self, request: ResponsesRequest, target: Target) -> UpstreamRequest:
        """A Responses call as the provider's own API takes it (`native_request` of it)."""
        return UpstreamRequest(
            url=f"{target.base_url}/responses",
            headers=self.auth_headers(target.secret),
            body=upstream_body(request, target.upstream_id),
        )


class OpenAIOnMomorKey(OpenAIAdapter):
    """OpenAI keeps nothing on Momor's key: `store` goes as false whatever was sent."""

    def body(self, body: ChatRequest, target: Target) -> Json:
        out = super().body(body, target)
        if target.momor_key:
            out["store"] = False
        return out


class AzureAdapter(OpenAIAdapter):
    """Azure OpenAI's v1 API: the deployment name as model, the key in `api-key`."""

    api = "azure"

    def auth_headers(self, secret: str) -> dict[str, str]:
        return {"api-key": secret, "content-type": "application/json"}


class MistralAdapter(OpenAIAdapter):
    """Mistral reads max_tokens and random_seed, and takes no stream_options (it always sends
    usage on its last chunk). Its embeddings take text alone, their dimensions as
    `output_dimension`."""

    api = "mistral"
    max_tokens_field = "max_tokens"
    seed_field = "random_seed"
    takes_stream_options = False
    speaks_responses = False
    part_tokens = Adapter.part_tokens  # no documented figure of OpenAI's

    def embeddings_body(self, request: EmbeddingRequest, target: Target) -> Json:
        out: Json = {"model": target.upstream_id, "input": request.get("input")}
        embedding_texts(request)  # token arrays (or no input) cannot be carried
        if request.get("dimensions") is not None:
            out["output_dimension"] = request["dimensions"]
        return out


class DeepInfraAdapter(OpenAIAdapter):
    api = "deepinfra"
    max_tokens_field = "max_tokens"
    takes_base64 = False
    reasoning_input_field = "reasoning_content"
    speaks_responses = False
    part_tokens = Adapter.part_tokens


class CompatibleAdapter(OpenAIAdapter):
    """Any server that speaks Chat Completions (vLLM, llama.cpp, Ollama, TGI...)."""

    api = "openai_compatible"
    max_tokens_field = "max_tokens"
    takes_base64 = False
    reasoning_input_field = "reasoning_content"
    speaks_responses = False
    part_tokens = Adapter.part_tokens


class ChunkRelay(StreamTranslator):
    """A Chat Completions stream: chunks pass through, reasoning renamed, state noted."""

    openai_chunks = True

    def feed(self, event: Event) -> list[ChatCompletionChunk]:
        if event.data == "[DONE]":
            self.state.finished = True
            return []
        chunk = orjson.loads(event.data)
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk and not chunk.get("choices"):
            raise StreamFailed(_stream_error(chunk["error"]))
        self._note(chunk)
        return [cast(ChatCompletionChunk, chunk)]

    def _note(self, chunk: Json) -> None:
        usage = Usage.from_openai(chunk.get("usage"))
        if usage is not None:
            self.state.usage = usage
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            if isinstance(delta, dict):
                answered_reasoning(delta)
            reason = choice.get("finish_reason")
            if reason:
                self.state.finish_reason = self.state.native_finish_reason = str(reason)

    def close(self) -> list[ChatCompletionChunk]:
        if self.state.finish_reason:
            self.state.finished = True
        return []


def _stream_error(error: object) -> Failure:
    if isinstance(error, dict):
        message = str(error.get("message") or "The provider reported an error mid-stream.")
        return Failure(None, message, openai_error(error, message))
    return Failure(None, "The provider reported an error mid-stream.")


def openai_embeddings(data: bytes) -> Embeddings:
    """OpenAI's embeddings answer: `data[]` put back in `index` order (an item without one
    stands where it is), every index from 0 up once; `usage.prompt_tokens` where it was sent."""
    body = orjson.loads(data)
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError("the provider's answer is not a list of embeddings")
    vectors: list[list[float] | None] = [None] * len(items)
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError("an item of the answer is not an embedding object")
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError("an embedding's index is not a whole number")
        if not 0 <= index < len(items) or vectors[index] is not None:
            raise ValueError(f"the answer's indices are not 0 to {len(items) - 1}, once each")
        vectors[index] = _embedding(item.get("embedding"))
    usage = body.get("usage")
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return Embeddings(
        vectors=[v for v in vectors if v is not None],
        prompt_tokens=None if prompt is None else token_count(prompt),
    )


def _embedding(value: object) -> list[float]:
    return base64_vector(value) if isinstance(value, str) else vector(value)


def base64_vector(text: str) -> list[float]:
    """An embedding OpenAI sent as `base64`: little-endian float32 values, one after another."""
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError("an embedding is not base64") from None
    if not raw or len(raw) % 4:
        raise ValueError("a base64 embedding is not a whole number of float32 values")
    values = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if not all(math.isfinite(number) for number in values):
        raise ValueError("a base64 embedding holds a value that is not finite")
    return values
