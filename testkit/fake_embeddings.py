"""Embeddings for the fake upstream: OpenAI's `POST .../embeddings` (on OpenAI's path, Azure's v1
path and Azure's deployments path, `/openai/deployments/{name}/embeddings`, whose deployment
stands for the model when the body names none), and the vectors every embeddings endpoint of
the fake answers with (the Gemini API's `batchEmbedContents` and Vertex's `predict` live in
`fake_gemini`).

A vector is deterministic from its input: value i of the vector of `text` is read from the
SHAKE-256 digest of the text (a token array: its JSON), two bytes a value, as a multiple of
1/32768 in [-1, 1), exact in float32 (so a base64 answer decodes to the very floats a float
answer writes). `DEFAULT_DIMENSIONS` values unless the call asks for `dimensions` (Mistral's
`output_dimension`); a shorter vector is the start of a longer one, as a truncated embedding
is. Tokens are counted as the fake counts them for chat: the words of a text (a token array:
its tokens), and a call's prompt at least 1.

Scripting works as for chat, by the model: `fail` (and `fail_times`), `delay_first_byte`,
`drop_after` 0 (the connection closed before any answer), `raw_body` (a malformed 2xx),
`response` (the whole body), `usage` (merged into the usage), `no_usage`, `extra` (merged into
the body).
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Sequence
from typing import Any

import orjson
from aiohttp import web

from testkit.fake_openai import NOT_JSON, Invalid, failure_body, loads_body
from testkit.fake_upstream import (
    UPSTREAM,
    Behaviour,
    Failure,
    Json,
    SseEvents,
    failure_response,
    json_response,
)

DEFAULT_DIMENSIONS = 8
ENCODINGS = ("float", "base64")
INVALID_INPUT = (
    "'$.input' is invalid. Please check the API reference: "
    "https://platform.openai.com/docs/api-reference."
)
_DEPLOYMENT = re.compile(r"(?:^|/)deployments/([^/]+)/$")


def embedding_vector(item: str | list[int], dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The fake's embedding of one input (a text or a token array)."""
    key = item if isinstance(item, str) else orjson.dumps(item).decode()
    digest = hashlib.shake_256(key.encode()).digest(2 * dimensions)
    return [(value - 32768) / 32768 for (value,) in struct.iter_unpack(">H", digest)]


def packed(vector: list[float]) -> str:
    """A vector as OpenAI's `base64` encoding writes it: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def input_tokens(item: str | list[int]) -> int:
    """One input's tokens as the fake counts them: a text's words, a token array's tokens."""
    return len(item.split()) if isinstance(item, str) else len(item)


def register(app: web.Application) -> None:
    app.router.add_post("/{prefix:(?:.*/)?}embeddings", embeddings)


async def embeddings(request: web.Request) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    body = loads_body(await request.read())
    model = _model(request, body)
    record = upstream.record(request, None if body is NOT_JSON else body, model)
    checked = _check(body, model)
    if isinstance(checked, Invalid):
        return await upstream.refuse(request, record, checked.response())
    return await upstream.serve(request, checked.model, record, checked)


def _model(request: web.Request, body: object) -> str | None:
    """The body's model, else the deployment an Azure deployments path names."""
    model = body.get("model") if isinstance(body, dict) else None
    if isinstance(model, str) and model:
        return model
    deployment = _DEPLOYMENT.search(request.match_info["prefix"])
    return deployment.group(1) if deployment else None


def _check(body: object, model: str | None) -> EmbeddingAnswer | Invalid:
    """The answer to a valid embeddings call, else the 400 OpenAI answers, in its wording."""
    if body is NOT_JSON or not isinstance(body, dict):
        return Invalid("We could not parse the JSON body of your request.")
    if model is None:
        return Invalid("you must provide a model parameter")
    if "input" not in body:
        return Invalid(
            "Missing required parameter: 'input'.", "input", "missing_required_parameter"
        )
    inputs = read_inputs(body["input"])
    if inputs is None:
        return Invalid(INVALID_INPUT, "input")
    encoding = body.get("encoding_format", "float")
    if encoding not in ENCODINGS:
        return Invalid(
            f"Invalid value for 'encoding_format' = {encoding}. Supported values are: "
            "'float' and 'base64'.",
            "encoding_format",
            "invalid_value",
        )
    dimensions = body.get("dimensions", body.get("output_dimension", DEFAULT_DIMENSIONS))
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        return Invalid(
            f"Invalid 'dimensions': expected an integer >= 1, but got {dimensions!r} instead.",
            "dimensions",
            "invalid_value",
        )
    return EmbeddingAnswer(model, inputs, dimensions, base64=encoding == "base64")


def read_inputs(value: object) -> list[str] | list[list[int]] | None:
    """The inputs of OpenAI's `input`, one by one; None for a value OpenAI refuses (not one of
    its four shapes, empty, or holding an empty text or token array)."""
    if isinstance(value, str):
        return [value] if value else None
    if not isinstance(value, list) or not value:
        return None
    if all(_token(item) for item in value):
        return [value]
    if all(isinstance(item, str) and item for item in value):
        return value
    if all(isinstance(item, list) and item and all(_token(t) for t in item) for item in value):
        return value
    return None


def _token(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class EmbeddingAnswer:
    """The answer to one valid OpenAI embeddings call."""

    stream = False

    def __init__(
        self, model: str, inputs: Sequence[str | list[int]], dimensions: int, *, base64: bool
    ) -> None:
        self.model = model
        self.inputs = list(inputs)
        self.dimensions = dimensions
        self.base64 = base64
        self.prompt_tokens = max(1, sum(input_tokens(item) for item in inputs))

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        data = [
            {"object": "embedding", "index": index, "embedding": self._encoded(item)}
            for index, item in enumerate(self.inputs)
        ]
        body: Json = {"object": "list", "data": data, "model": self.model}
        if not behaviour.no_usage:
            usage: Json = {"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens}
            body["usage"] = {**usage, **behaviour.usage}
        return json_response({**body, **behaviour.extra})

    def _encoded(self, item: str | list[int]) -> Any:
        vector = embedding_vector(item, self.dimensions)
        return packed(vector) if self.base64 else vector

    def events(self, behaviour: Behaviour) -> SseEvents:
        return SseEvents(head=[], body=[], tail=[], error=b"")  # embeddings never stream

    def failure(self, fail: Failure) -> web.Response:
        return failure_response(fail, failure_body(fail))
