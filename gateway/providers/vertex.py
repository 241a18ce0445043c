"""Vertex AI: Gemini's translation on Vertex's URL, authenticated with an access token.

The key (Momor's or a saved one) is a service account JSON, exchanged for an access token
before the adapter runs (`gateway.upstream.credentials`): the target's secret is the token and
its project the account's `project_id`. The location is the offering's region, or `global` for
the provider's root.

Reference: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference"""

from __future__ import annotations

from typing import ClassVar

import orjson

from gateway.providers.contract import ChatRequest, Target, UpstreamRequest, segment
from gateway.providers.gemini import GeminiAdapter, method
from gateway.providers.gemini.request import request_body


class VertexAdapter(GeminiAdapter):
    api: ClassVar[str] = "vertex"

    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        out = request_body(body, target)
        return UpstreamRequest(
            url=model_url(target) + method(target.stream),
            headers={
                "authorization": f"Bearer {target.secret}",
                "content-type": "application/json",
            },
            body=orjson.dumps(out),
        )


def model_url(target: Target) -> str:
    """The model's URL; each value is one path segment, quoted (a `/`, `?`, `#` or `..` in a
    project, a region or a model id never leaves its segment)."""
    location = segment(target.region or "global")
    return (
        f"{target.base_url}/projects/{segment(target.project)}/locations/{location}"
        f"/publishers/google/models/{segment(target.upstream_id)}"
    )
