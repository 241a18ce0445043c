"""The Gemini API (generativelanguage.googleapis.com): Chat Completions translated into
`generateContent` and `streamGenerateContent`, the key in `x-goog-api-key`. Vertex AI
(`gateway.providers.vertex`) speaks the same translation on its own URL and auth.

Reference: https://ai.google.dev/api/generate-content"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from gateway.options import CallOptions
from gateway.providers.base import Adapter, Failure, Reply, StreamTranslator, UpstreamRequest
from gateway.providers.gemini.request import request_body
from gateway.providers.gemini.response import failure_of, reply_of
from gateway.providers.gemini.stream import GeminiStream
from gateway.routing import Candidate


def method(stream: bool) -> str:
    return ":streamGenerateContent?alt=sse" if stream else ":generateContent"


class GeminiAdapter(Adapter):
    api: ClassVar[str] = "gemini"

    async def prepare(
        self, body: dict[str, Any], options: CallOptions, candidate: Candidate
    ) -> UpstreamRequest:
        out = request_body(body, candidate.offering)
        offering = candidate.offering
        return UpstreamRequest(
            url=f"{offering.base_url}/models/{offering.upstream_id}{method(options.stream)}",
            headers={"x-goog-api-key": candidate.secret, "content-type": "application/json"},
            body=orjson.dumps(out),
        )

    def reply(self, data: bytes) -> Reply:
        return reply_of(data)

    def stream(self, options: CallOptions) -> StreamTranslator:
        return GeminiStream()

    def failure(self, status: int, data: bytes) -> Failure:
        return failure_of(status, data)


__all__ = ["GeminiAdapter", "method"]
