"""The Gemini API (generativelanguage.googleapis.com): Chat Completions translated into
`generateContent` and `streamGenerateContent`, the key in `x-goog-api-key`. Vertex AI
(`gateway.providers.vertex`) speaks the same translation on its own URL and auth. Embeddings
go as `batchEmbedContents` (`gateway.providers.gemini.embeddings`).

Reference: https://ai.google.dev/api/generate-content"""

from __future__ import annotations

from typing import ClassVar

import orjson

from gateway.providers.contract import (
    CHAT_COMPLETIONS_INPUTS,
    Adapter,
    ChatRequest,
    EmbeddingRequest,
    Embeddings,
    Failure,
    Reply,
    StreamTranslator,
    Target,
    UpstreamRequest,
    positive_int,
    segments,
)
from gateway.providers.gemini.embeddings import batch_body, batch_embeddings
from gateway.providers.gemini.request import request_body, sent_ceiling
from gateway.providers.gemini.response import failure_of, reply_of
from gateway.providers.gemini.stream import GeminiStream

# Gemini's token counting and media resolution docs: an image costs 258 tokens per 768-pixel
# tile on Gemini 2 (bounded here by an image of 6,144 x 6,144 pixels: 64 tiles), 1,120 on
# Gemini 3 at its default (high) resolution; a PDF page 258 tokens on Gemini 2 and 560 on
# Gemini 3, up to 1,000 pages. Thinking counts within maxOutputTokens.
IMAGE_TOKENS = 64 * 258
FILE_TOKENS = 1_000 * 560


def method(stream: bool) -> str:
    return ":streamGenerateContent?alt=sse" if stream else ":generateContent"


class GeminiAdapter(Adapter):
    api: ClassVar[str] = "gemini"
    # Images, audio and files as inline bytes, an image also by address.
    input_kinds: ClassVar[frozenset[str]] = CHAT_COMPLETIONS_INPUTS
    embeds: ClassVar[bool] = True

    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        out = request_body(body, target)
        return UpstreamRequest(
            url=f"{target.base_url}/models/{segments(target.upstream_id)}{method(target.stream)}",
            headers=self.headers(target),
            body=orjson.dumps(out),
        )

    def headers(self, target: Target) -> dict[str, str]:
        return {"x-goog-api-key": target.secret, "content-type": "application/json"}

    def prepare_embeddings(self, request: EmbeddingRequest, target: Target) -> UpstreamRequest:
        return UpstreamRequest(
            url=f"{target.base_url}/models/{segments(target.upstream_id)}:batchEmbedContents",
            headers=self.headers(target),
            body=orjson.dumps(batch_body(request, target.upstream_id)),
        )

    def embeddings(self, data: bytes) -> Embeddings:
        return batch_embeddings(data)

    def reply(self, data: bytes) -> Reply:
        return reply_of(data)

    def stream(self) -> StreamTranslator:
        return GeminiStream()

    def failure(self, status: int, data: bytes) -> Failure:
        return failure_of(status, data)

    def output_ceiling(self, body: ChatRequest, target: Target) -> int | None:
        return positive_int(sent_ceiling(body))

    def part_tokens(self, kind: str, target: Target) -> int | None:
        return {"image": IMAGE_TOKENS, "file": FILE_TOKENS}.get(kind)


__all__ = ["GeminiAdapter", "method"]
