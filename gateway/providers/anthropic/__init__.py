"""Anthropic's Messages API (`POST {base}/v1/messages`): the call translated into it by
`request`, its answer back by `response`, its stream back by `stream`; a Messages call sent as
its client wrote it, and its token count, by `native`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import orjson

from gateway.providers.anthropic import native, request, response
from gateway.providers.anthropic.native import API_VERSION
from gateway.providers.anthropic.stream import AnthropicStream
from gateway.providers.contract import (
    Adapter,
    ChatRequest,
    Failure,
    Json,
    Reply,
    StreamTranslator,
    Target,
    UpstreamRequest,
)

# Anthropic's vision docs: an image over 1,568 pixels on its long edge or about 1,600 tokens
# is scaled down first, so one costs at most about 1,600. Its PDF support: up to 100 pages,
# each page's text (1,500 to 3,000 tokens) and the page as an image.
IMAGE_TOKENS = 1_600
FILE_TOKENS = 100 * (3_000 + IMAGE_TOKENS)


class AnthropicAdapter(Adapter):
    api: ClassVar[str] = "anthropic"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"image", "file"})  # no audio input

    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        out = request.request_body(
            body, target.upstream_id, target.reasoning_efforts, target.stream
        )
        return UpstreamRequest(
            url=f"{target.base_url}/v1/messages",
            headers={
                "x-api-key": target.secret,
                "anthropic-version": API_VERSION,
                "content-type": "application/json",
            },
            body=orjson.dumps(out),
        )

    def prepare_native(
        self, body: Json, headers: Mapping[str, str], target: Target
    ) -> UpstreamRequest:
        """A Messages call as its client wrote it (`native`); its answer is read by `reply`
        and its events by `stream`, as a translated call's."""
        return native.native_request(body, headers, target)

    def prepare_count(
        self, body: Json, headers: Mapping[str, str], target: Target
    ) -> UpstreamRequest:
        """A count_tokens call as its client wrote it; its answer is read by `input_tokens`."""
        return native.native_request(body, headers, target, native.COUNT_PATH)

    def input_tokens(self, data: bytes) -> int:
        return native.input_tokens(data)

    def reply(self, data: bytes) -> Reply:
        return response.reply(data)

    def stream(self) -> StreamTranslator:
        return AnthropicStream()

    def failure(self, status: int, data: bytes) -> Failure:
        return response.failure(status, data)

    def output_ceiling(self, body: ChatRequest, target: Target) -> int | None:
        """Anthropic is always sent a ceiling: the client's, else 4,096 plus any thinking
        budget."""
        return max(request.sent_ceiling(body, target.reasoning_efforts), 0)

    def answers(self, body: ChatRequest) -> int:
        return 1  # n is left off

    def part_tokens(self, kind: str, target: Target) -> int | None:
        return {"image": IMAGE_TOKENS, "file": FILE_TOKENS}.get(kind)
