"""Anthropic's Messages API (`POST {base}/v1/messages`): the call translated into it by
`request`, its answer back by `response`, its stream back by `stream`."""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from gateway.options import CallOptions
from gateway.providers.anthropic import request, response
from gateway.providers.anthropic.stream import AnthropicStream
from gateway.providers.base import Adapter, Failure, Reply, StreamTranslator, UpstreamRequest
from gateway.routing import Candidate

API_VERSION = "2023-06-01"


class AnthropicAdapter(Adapter):
    api: ClassVar[str] = "anthropic"

    async def prepare(
        self, body: dict[str, Any], options: CallOptions, candidate: Candidate
    ) -> UpstreamRequest:
        offering = candidate.offering
        out = request.request_body(
            body, offering.upstream_id, offering.reasoning_efforts, options.stream
        )
        return UpstreamRequest(
            url=f"{offering.base_url}/v1/messages",
            headers={
                "x-api-key": candidate.secret,
                "anthropic-version": API_VERSION,
                "content-type": "application/json",
            },
            body=orjson.dumps(out),
        )

    def reply(self, data: bytes) -> Reply:
        return response.reply(data)

    def stream(self, options: CallOptions) -> StreamTranslator:
        return AnthropicStream()

    def failure(self, status: int, data: bytes) -> Failure:
        return response.failure(status, data)
