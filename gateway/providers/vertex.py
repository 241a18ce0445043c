"""Vertex AI: Gemini's translation on Vertex's URL, authenticated with an access token.

The key (Momor's or a saved one) is a service account JSON, exchanged for an access token
before the adapter runs (`gateway.upstream.credentials`): the target's secret is the token and
its project the account's `project_id`. The location is the offering's region, or `global` for
the provider's root.

Embeddings go to the model's `:predict`, which Vertex's text embeddings API reference documents
for every text embedding model it serves (gemini-embedding-001, text-embedding-005,
text-multilingual-embedding-002): `{"instances": [{"content": text}, ...], "parameters":
{"outputDimensionality": dimensions}}`, answered by `predictions[]` in the instances' order, each
`embeddings.values` with `embeddings.statistics.token_count`, the prompt tokens being their sum.
Vertex's `batchEmbedContents` (what the Gemini API speaks) is newer there: Google's SDK sends
it only for Gemini-family models, and its request's fields are moving into
`embedContentConfig`; `:predict` is the one the reference documents for every model, with a
count per input. It takes at most 250 instances, and gemini-embedding-001 one: a call with more
inputs cannot be carried there (it moves to a provider that takes it, the Gemini API's batch
among them). Text alone is embedded (token arrays cannot be carried);
`encoding_format` and `user` are left off, as on the Gemini API.

Reference: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference,
https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api"""

from __future__ import annotations

from typing import ClassVar

import orjson

from gateway.providers.contract import (
    CannotCarry,
    ChatRequest,
    EmbeddingRequest,
    Embeddings,
    Json,
    Target,
    UpstreamRequest,
    embedding_texts,
    segment,
    tokens,
    vector,
)
from gateway.providers.gemini import GeminiAdapter, method
from gateway.providers.gemini.request import request_body

MAX_INSTANCES = 250
ONE_INSTANCE = ("gemini-embedding-001",)
"""The models whose `:predict` takes one instance a call (a model id that starts with one)."""


class VertexAdapter(GeminiAdapter):
    api: ClassVar[str] = "vertex"

    def prepare(self, body: ChatRequest, target: Target) -> UpstreamRequest:
        out = request_body(body, target)
        return UpstreamRequest(
            url=model_url(target) + method(target.stream),
            headers=self.headers(target),
            body=orjson.dumps(out),
        )

    def headers(self, target: Target) -> dict[str, str]:
        return {"authorization": f"Bearer {target.secret}", "content-type": "application/json"}

    def prepare_embeddings(self, request: EmbeddingRequest, target: Target) -> UpstreamRequest:
        return UpstreamRequest(
            url=model_url(target) + ":predict",
            headers=self.headers(target),
            body=orjson.dumps(predict_body(request, target.upstream_id)),
        )

    def embeddings(self, data: bytes) -> Embeddings:
        return predicted_embeddings(data)


def predict_body(request: EmbeddingRequest, upstream_id: str) -> Json:
    texts = embedding_texts(request)
    most = 1 if upstream_id.startswith(ONE_INSTANCE) else MAX_INSTANCES
    if len(texts) > most:
        raise CannotCarry(f"Vertex embeds at most {most} inputs in one call with {upstream_id}")
    out: Json = {"instances": [{"content": text} for text in texts]}
    dimensions = request.get("dimensions")
    if dimensions is not None:
        out["parameters"] = {"outputDimensionality": dimensions}
    return out


def predicted_embeddings(data: bytes) -> Embeddings:
    """`{"predictions": [{"embeddings": {"values": [...], "statistics": {"token_count": n}}}]}`,
    in the order of the instances. The prompt tokens are the instances' counts added up, or
    None unless every instance carries one (a part of the count would bill less than was
    used)."""
    body = orjson.loads(data)
    predictions = body.get("predictions") if isinstance(body, dict) else None
    if not isinstance(predictions, list) or not predictions:
        raise ValueError("the provider's answer is not a list of predictions")
    vectors, counts = [], []
    for prediction in predictions:
        embedding = prediction.get("embeddings") if isinstance(prediction, dict) else None
        if not isinstance(embedding, dict):
            raise ValueError("a prediction holds no embedding")
        vectors.append(vector(embedding.get("values")))
        statistics = embedding.get("statistics")
        counts.append(statistics.get("token_count") if isinstance(statistics, dict) else None)
    if any(count is None for count in counts):
        return Embeddings(vectors, None)
    return Embeddings(vectors, tokens(*counts))


def model_url(target: Target) -> str:
    """The model's URL; each value is one path segment, quoted (a `/`, `?`, `#` or `..` in a
    project, a region or a model id never leaves its segment)."""
    location = segment(target.region or "global")
    return (
        f"{target.base_url}/projects/{segment(target.project)}/locations/{location}"
        f"/publishers/google/models/{segment(target.upstream_id)}"
    )
