"""OpenAI's embeddings call as the Gemini API's `batchEmbedContents`, and its answer back.

Each input is one request of the batch, `{"model": "models/{id}", "content": {"parts":
[{"text": ...}]}}`, with the call's `dimensions` as its `outputDimensionality`; the answer's
`embeddings[]` are the vectors in the inputs' order. Gemini embeds text alone (token arrays
cannot be carried) and takes at most 100 requests in one batch (a larger call cannot be carried
either: it moves to a provider that takes it). `encoding_format` and `user` are left off: the
answer is floats, and the relay encodes them to base64 for a client that asked for it. The
answer carries no token count (`usageMetadata.promptTokenCount` is read should it carry one).

Reference: https://ai.google.dev/api/embeddings#method:-models.batchembedcontents"""

from __future__ import annotations

import orjson

from gateway.providers.contract import (
    CannotCarry,
    EmbeddingRequest,
    Embeddings,
    Json,
    embedding_texts,
    token_count,
    vector,
)

MAX_BATCH = 100


def batch_body(request: EmbeddingRequest, upstream_id: str) -> Json:
    texts = embedding_texts(request)
    if len(texts) > MAX_BATCH:
        raise CannotCarry(f"the Gemini API embeds at most {MAX_BATCH} inputs in one call")
    dimensions = request.get("dimensions")
    requests: list[Json] = []
    for text in texts:
        item: Json = {"model": f"models/{upstream_id}", "content": {"parts": [{"text": text}]}}
        if dimensions is not None:
            item["outputDimensionality"] = dimensions
        requests.append(item)
    return {"requests": requests}


def batch_embeddings(data: bytes) -> Embeddings:
    """`{"embeddings": [{"values": [...]}, ...]}`, in the order of the requests."""
    body = orjson.loads(data)
    items = body.get("embeddings") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError("the provider's answer is not a list of embeddings")
    vectors = [vector(item.get("values") if isinstance(item, dict) else None) for item in items]
    usage = body.get("usageMetadata")
    prompt = usage.get("promptTokenCount") if isinstance(usage, dict) else None
    return Embeddings(vectors, None if prompt is None else token_count(prompt))
