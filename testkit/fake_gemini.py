"""Gemini for the fake upstream: `models/{m}:generateContent` and `:streamGenerateContent?alt=sse`
on the Gemini API's path (key in `x-goog-api-key`) and on Vertex AI's
(`.../publishers/google/models/{m}:...`, a Bearer token from the fake's own OAuth token
endpoint, `POST /token`), answering with Gemini's real shapes.

A body the real API would reject gets Google's 400: every part of it is validated with the
official SDK's types (`google.genai.types`, camelCase aliases, unknown fields forbidden), plus
the turn rules the API checks. With `generationConfig.candidateCount` = n the fake answers n
candidates, candidate i > 0 saying the scripted text followed by ` (candidate i)`.

Embeddings: `models/{m}:batchEmbedContents` on the Gemini API's path (each request's model
`models/{m}`, at most 100 requests, answered `{"embeddings": [{"values": [...]}]}` in order and
with no token count unless the script's `usage` gives a `usageMetadata`), and Vertex's
`.../publishers/google/models/{m}:predict` (`instances[].content`, at most 250 and one for
gemini-embedding-001, `parameters.outputDimensionality`, answered with `predictions[]` carrying
`statistics.token_count`, left off under `no_usage`). The vectors and counts are
`fake_embeddings`'; scripting works as for generateContent.

Token endpoint controls: `POST /_fake/tokens {"expires_in": s}` sets the lifetime of the tokens
it issues and zeroes its count of exchanges (also `"fail": {"status": n, "body": "..."}` to
refuse every exchange with that answer, `"redirect": URL` to answer 302 to it); `GET
/_fake/tokens` gives that count.
"""

from __future__ import annotations

import base64
import time
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Any

import orjson
import pydantic
from aiohttp import web
from google.genai import types

from testkit.fake_embeddings import DEFAULT_DIMENSIONS, embedding_vector, input_tokens
from testkit.fake_upstream import (
    UPSTREAM,
    Behaviour,
    Failure,
    Json,
    Record,
    SseEvents,
    ToolCall,
    failure_response,
    json_response,
    split_text,
)

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
TOP_LEVEL: dict[str, Any] = {
    "systemInstruction": types.Content,
    "tools": list[types.Tool],
    "toolConfig": types.ToolConfig,
    "safetySettings": list[types.SafetySetting],
    "generationConfig": types.GenerationConfig,
    "cachedContent": str,
    "labels": dict[str, str],
    "serviceTier": types.ServiceTier,
}
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
MID_STREAM = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
DEFAULT_EXPIRES_IN = 3599


def register(app: web.Application) -> None:
    app[TOKENS] = Tokens()
    app.router.add_post("/{prefix:(?:.*/)?}models/{target:[^/]+}", generate)
    app.router.add_post("/token", token)
    app.router.add_get("/_fake/tokens", tokens_status)
    app.router.add_post("/_fake/tokens", tokens_script)


# The token endpoint


@dataclass
class Tokens:
    expires_in: int = DEFAULT_EXPIRES_IN
    exchanges: int = 0
    issued: dict[str, float] = field(default_factory=dict)
    fail: Json | None = None
    redirect: str | None = None

    def issue(self) -> Json:
        self.exchanges += 1
        value = f"ya29.fake-{uuid.uuid4().hex}"
        self.issued[value] = time.time() + self.expires_in
        return {"access_token": value, "expires_in": self.expires_in, "token_type": "Bearer"}

    def valid(self, value: str) -> bool:
        return self.issued.get(value, 0) > time.time()


TOKENS = web.AppKey("gemini_tokens", Tokens)


async def token(request: web.Request) -> web.Response:
    tokens = request.app[TOKENS]
    if tokens.fail is not None or tokens.redirect is not None:
        tokens.exchanges += 1
        return _scripted_token_answer(tokens)
    form = await request.post()
    assertion = str(form.get("assertion") or "")
    if form.get("grant_type") != JWT_BEARER or assertion.count(".") != 2:
        return json_response(
            {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}, 400
        )
    return json_response(request.app[TOKENS].issue())


def _scripted_token_answer(tokens: Tokens) -> web.Response:
    if tokens.redirect is not None:
        return web.Response(status=302, headers={"Location": tokens.redirect})
    fail = tokens.fail or {}
    body = str(fail.get("body", ""))
    return web.Response(status=int(fail.get("status", 400)), text=body)


async def tokens_status(request: web.Request) -> web.Response:
    tokens = request.app[TOKENS]
    return json_response({"exchanges": tokens.exchanges, "expires_in": tokens.expires_in})


async def tokens_script(request: web.Request) -> web.Response:
    data = orjson.loads(await request.read() or b"{}")
    tokens = request.app[TOKENS]
    tokens.expires_in = int(data.get("expires_in", DEFAULT_EXPIRES_IN))
    tokens.exchanges = 0
    tokens.fail = data.get("fail")
    tokens.redirect = data.get("redirect")
    return json_response({"ok": True})


# generateContent


async def generate(request: web.Request) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    model, _, verb = request.match_info["target"].partition(":")
    raw = await request.read()
    body = _loads(raw)
    record = upstream.record(request, body, model)
    if verb in EMBEDDING_VERBS:
        return await _embed(request, record, model, verb, body)
    refusal = _refusal(request, verb, body, model)
    if refusal is not None or not isinstance(body, dict):
        return await upstream.refuse(request, record, refusal or _error(400, "Bad body."))
    answer = GeminiAnswer(model, body, stream=verb == "streamGenerateContent")
    return await upstream.serve(request, model, record, answer)


def _loads(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def google_error(status: int, message: str) -> Json:
    return {
        "error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
    }


def _error(status: int, message: str) -> web.Response:
    return json_response(google_error(status, message), status)


def _refusal(request: web.Request, verb: str, body: object, model: str) -> web.Response | None:
    if verb not in ("generateContent", "streamGenerateContent"):
        return _error(404, f"Method not found: {verb}")
    if verb == "streamGenerateContent" and request.query.get("alt") != "sse":
        return _error(400, "The fake streams only as server-sent events (alt=sse).")
    denied = _auth(request)
    if denied is not None:
        return denied
    problem = invalid(body, model)
    return None if problem is None else _error(400, problem)


def _auth(request: web.Request) -> web.Response | None:
    if "/publishers/google/" in request.path:
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not request.app[TOKENS].valid(bearer):
            return _error(
                401,
                "Request had invalid authentication credentials. Expected OAuth 2 access "
                "token, login cookie or other valid authentication credential.",
            )
        return None
    if not request.headers.get("x-goog-api-key"):
        return _error(
            403, "Method doesn't allow unregistered callers (callers without established identity)."
        )
    return None


# What the real API rejects


def invalid(body: object, model: str) -> str | None:
    """Why the real API would reject this body, or None."""
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Expected an object."
    unknown = sorted(set(body) - set(TOP_LEVEL) - {"contents"})
    if unknown:
        return f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    checks = [
        _sdk_check(name, TOP_LEVEL[name], body[name]) for name in sorted(set(body) - {"contents"})
    ]
    checks.append(_sdk_check("contents", list[types.Content], contents))
    return next((c for c in checks if c), None) or turn_problem(contents, model)


def _sdk_check(name: str, kind: Any, value: object) -> str | None:
    """Validate with the SDK's pydantic types; an unknown enum value only warns there, and is
    an error here as it is for the API."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            pydantic.TypeAdapter(kind).validate_json(orjson.dumps(value))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in (name, *first["loc"]))
        return f"Invalid JSON payload received. Invalid value at '{where}': {first['msg']}"
    except UserWarning as exc:
        return f"Invalid value at '{name}': {exc}"
    return None


def turn_problem(contents: list[Json], model: str) -> str | None:
    """The turn rules of function calling, and Gemini 3's check of thought signatures on the
    function calls of the current turn (https://ai.google.dev/gemini-api/docs/thought-signatures)."""
    for position, content in enumerate(contents):
        if content.get("role") not in (None, "user", "model"):
            return "Please use a valid role: user, model."
        calls = _count(content, "functionCall")
        if calls and position and not _answers_or_asks(contents[position - 1]):
            return (
                "Please ensure that function call turn comes immediately after a user turn "
                "or after a function response turn."
            )
        following = contents[position + 1] if position + 1 < len(contents) else None
        if calls and following is not None and _count(following, "functionResponse") != calls:
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
    if model.startswith("gemini-3"):
        return _missing_signature(contents)
    return None


def _count(content: Json, kind: str) -> int:
    return sum(1 for p in content.get("parts") or () if kind in p)


def _answers_or_asks(content: Json) -> bool:
    return content.get("role") in (None, "user")


def _missing_signature(contents: list[Json]) -> str | None:
    start = max(
        (i for i, c in enumerate(contents) if c.get("role") != "model" and _count(c, "text")),
        default=0,
    )
    for position, content in enumerate(contents[start:], start):
        calls = [p for p in content.get("parts") or () if "functionCall" in p]
        if calls and not calls[0].get("thoughtSignature"):
            name = calls[0]["functionCall"].get("name")
            return (
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                f"to degraded model performance. Additional data, function call `{name}` , "
                f"position {position + 1}."
            )
    return None


# Answers


def signature(label: str) -> str:
    return base64.b64encode(f"fake-signature:{label}".encode()).decode()


class GeminiAnswer:
    """The answers to one valid generateContent call."""

    def __init__(self, model: str, body: Json, *, stream: bool) -> None:
        config = body.get("generationConfig") or {}
        self.model = model
        self.stream = stream
        self.candidates = int(config.get("candidateCount") or 1)
        self.logprobs = int(config.get("logprobs") or 0) if config.get("responseLogprobs") else None
        self.prompt_tokens = max(1, sum(len(t.split()) for t in _texts(body.get("contents"))))
        self.response_id = uuid.uuid4().hex[:22]

    # plain

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        candidates = [self._candidate(behaviour, i) for i in range(self.candidates)]
        return json_response({**self._envelope(candidates, behaviour), **behaviour.extra})

    def _candidate(self, behaviour: Behaviour, index: int) -> Json:
        parts = [
            *_thought_parts(behaviour, whole=True),
            *self._text_parts(behaviour, index, whole=True),
        ]
        parts.extend(_call_parts(behaviour.tool_calls))
        candidate: Json = {
            "content": {"role": "model", "parts": parts},
            "finishReason": behaviour.finish_reason or "STOP",
            "index": index,
        }
        if self.logprobs is not None:
            candidate["logprobsResult"] = self._logprobs(self._text(behaviour, index))
        return candidate

    def _text(self, behaviour: Behaviour, index: int) -> str | None:
        text = behaviour.content
        return text if text is None or index == 0 else f"{text} (candidate {index})"

    def _text_parts(self, behaviour: Behaviour, index: int, *, whole: bool) -> list[Json]:
        text = self._text(behaviour, index)
        if text is None:
            return []
        pieces = [text] if whole else split_text(text, behaviour.chunks)
        parts: list[Json] = [{"text": piece} for piece in pieces]
        if whole and behaviour.text_signature:
            parts[-1]["thoughtSignature"] = signature("text")
        return parts

    def _logprobs(self, text: str | None) -> Json:
        """Each word of the text chosen at -0.25, with `logprobs` alternatives per step."""
        pieces = split_text(text or "")
        chosen = [_logprob(p, -0.25) for p in pieces]
        alternatives = [_logprob(f"alt{k}", -2.0 - k) for k in range(1, self.logprobs or 0)]
        return {
            "topCandidates": [{"candidates": [c, *alternatives]} for c in chosen],
            "chosenCandidates": chosen,
            "logProbabilitySum": -0.25 * len(pieces),
        }

    def usage(self, behaviour: Behaviour) -> Json:
        thoughts = len(split_text(behaviour.reasoning)) if behaviour.reasoning else 0
        output = sum(
            len(split_text(self._text(behaviour, i) or "")) for i in range(self.candidates)
        )
        output += len(behaviour.tool_calls) * self.candidates
        usage: Json = {"promptTokenCount": self.prompt_tokens, "candidatesTokenCount": output}
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts * self.candidates
        usage.update(behaviour.usage)
        usage["totalTokenCount"] = sum(
            int(usage.get(k) or 0)
            for k in ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount")
        )
        return usage

    def _envelope(self, candidates: list[Json], behaviour: Behaviour | None) -> Json:
        out: Json = {"candidates": candidates}
        if behaviour is not None and not behaviour.no_usage:
            out["usageMetadata"] = self.usage(behaviour)
        out["modelVersion"] = self.model
        out["responseId"] = self.response_id
        return out

    # streamed

    def events(self, behaviour: Behaviour) -> SseEvents:
        body = [self._event(parts) for parts in self._stream_parts(behaviour)]
        closing: Json = {"text": ""}
        if behaviour.text_signature:  # a stream signs its text on the closing empty part
            closing["thoughtSignature"] = signature("text")
        last = [
            {
                "content": {"role": "model", "parts": [closing]},
                "finishReason": behaviour.finish_reason or "STOP",
                "index": i,
            }
            for i in range(self.candidates)
        ]
        tail = _sse({**self._envelope(last, behaviour), **behaviour.extra})
        message = behaviour.stream_error_message or MID_STREAM
        return SseEvents(head=[], body=body, tail=[tail], error=_sse(google_error(500, message)))

    def _stream_parts(self, behaviour: Behaviour) -> list[list[list[Json]]]:
        """Per event, each candidate's parts: thoughts, text pieces, then the function calls."""
        thoughts = [[p] for p in _thought_parts(behaviour, whole=False)]
        texts = [self._text_parts(behaviour, i, whole=False) for i in range(self.candidates)]
        calls = [[p] for p in _call_parts(behaviour.tool_calls)]
        events = [[parts] * self.candidates for parts in thoughts]
        steps = max(len(t) for t in texts)
        events += [[t[step : step + 1] for t in texts] for step in range(steps)]
        events += [[parts] * self.candidates for parts in calls]
        return events

    def _event(self, per_candidate: list[list[Json]]) -> bytes:
        candidates = [
            {"content": {"role": "model", "parts": parts}, "index": i}
            for i, parts in enumerate(per_candidate)
            if parts
        ]
        event = self._envelope(candidates, None)
        event["usageMetadata"] = {
            "promptTokenCount": self.prompt_tokens,
            "totalTokenCount": self.prompt_tokens,
        }
        return _sse(event)

    def failure(self, fail: Failure) -> web.Response:
        message = f"The fake upstream was scripted to fail with status {fail.status}."
        return failure_response(fail, google_error(fail.status, message))


def _logprob(token: str, value: float) -> Json:
    return {"token": token, "logProbability": value}


def _thought_parts(behaviour: Behaviour, *, whole: bool) -> list[Json]:
    """The reasoning as thought parts, the last one signed."""
    if behaviour.reasoning is None:
        return []
    pieces = [behaviour.reasoning] if whole else split_text(behaviour.reasoning)
    parts: list[Json] = [{"text": piece, "thought": True} for piece in pieces]
    parts[-1]["thoughtSignature"] = signature("thought")
    return parts


def _call_parts(calls: tuple[ToolCall, ...]) -> list[Json]:
    """Function calls; Gemini signs the first of a turn's calls."""
    parts: list[Json] = []
    for index, call in enumerate(calls):
        part: Json = {"functionCall": {"name": call.name, "args": orjson.loads(call.arguments)}}
        if index == 0:
            part["thoughtSignature"] = signature(f"call:{call.name}")
        parts.append(part)
    return parts


def _texts(contents: object) -> list[str]:
    if not isinstance(contents, list):
        return []
    return [
        p["text"]
        for c in contents
        if isinstance(c, dict)
        for p in c.get("parts") or ()
        if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]


def _sse(data: object) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\r\n\r\n"


# Embeddings: the Gemini API's batchEmbedContents, Vertex's predict

EMBEDDING_VERBS = frozenset({"batchEmbedContents", "predict"})
MAX_BATCH = 100
MAX_INSTANCES = 250
ONE_INSTANCE = ("gemini-embedding-001",)
EMBED_FIELDS = frozenset({"model", "content", "taskType", "title", "outputDimensionality"})
INSTANCE_FIELDS = frozenset({"content", "task_type", "title"})
PARAMETERS = frozenset({"outputDimensionality", "autoTruncate"})


async def _embed(
    request: web.Request, record: Record, model: str, verb: str, body: object
) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    vertex = "/publishers/google/" in request.path
    if verb != ("predict" if vertex else "batchEmbedContents"):
        return await upstream.refuse(request, record, _error(404, f"Method not found: {verb}"))
    refusal = _auth(request)
    answer = _embedding_answer(body, model, vertex=vertex) if refusal is None else refusal
    if isinstance(answer, web.Response):
        return await upstream.refuse(request, record, answer)
    return await upstream.serve(request, model, record, answer)


def _embedding_answer(body: object, model: str, *, vertex: bool) -> EmbedAnswer | web.Response:
    """The answer to a valid call, else Google's 400 for it."""
    read = _instances(body, model) if vertex else _batch(body, model)
    if isinstance(read, str):
        return _error(400, read)
    return EmbedAnswer([(text, size or DEFAULT_DIMENSIONS) for text, size in read], vertex=vertex)


def _batch(body: object, model: str) -> list[tuple[str, int | None]] | str:
    """Each request's text and dimensions, else why the API refuses the batch."""
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Expected an object."
    unknown = sorted(set(body) - {"requests"})
    if unknown:
        return f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        return "* BatchEmbedContentsRequest.requests: contents is not specified"
    if len(requests) > MAX_BATCH:
        return "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
    read = []
    for index, item in enumerate(requests):
        where = f"BatchEmbedContentsRequest.requests[{index}]"
        problem = _embed_request_problem(item, model, where)
        if problem is not None:
            return problem
        read.append((" ".join(_texts([item["content"]])), item.get("outputDimensionality")))
    return read


def _embed_request_problem(item: object, model: str, where: str) -> str | None:
    if not isinstance(item, dict):
        return f"Invalid JSON payload received. Invalid value at '{where}': expected an object."
    unknown = sorted(set(item) - EMBED_FIELDS)
    if unknown:
        return f"Invalid JSON payload received. Unknown name \"{unknown[0]}\" at '{where}'."
    if item.get("model") != f"models/{model}":
        return (
            f"* {where}.model: Model in the request ({item.get('model')}) must match the "
            f"model of the batch (models/{model})."
        )
    if "content" not in item:
        return f"* {where}.content: content is not specified"
    problem = _sdk_check(f"{where}.content", types.Content, item["content"])
    if problem is None and not _texts([item["content"]]):
        problem = f"* {where}.content: the content holds no text"
    return problem or _dimensions_problem(item.get("outputDimensionality"), where)


def _dimensions_problem(value: object, where: str) -> str | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return None
    return f"* {where}.outputDimensionality: must be a positive integer"


def _instances(body: object, model: str) -> list[tuple[str, int | None]] | str:
    """Each instance's text and the call's dimensions, else why Vertex refuses the call."""
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Expected an object."
    instances = body.get("instances")
    if not isinstance(instances, list) or not instances:
        return "Invalid JSON payload received. instances is not specified"
    most = 1 if model.startswith(ONE_INSTANCE) else MAX_INSTANCES
    if len(instances) > most:
        return f"Unable to submit request because {model} takes at most {most} instances."
    texts = []
    for index, instance in enumerate(instances):
        if (
            not isinstance(instance, dict)
            or set(instance) - INSTANCE_FIELDS
            or not isinstance(instance.get("content"), str)
        ):
            return f"Invalid instance at index {index}: it takes a content string."
        texts.append(instance["content"])
    parameters = body.get("parameters", {})
    if not isinstance(parameters, dict) or set(parameters) - PARAMETERS:
        return "Invalid parameters: outputDimensionality and autoTruncate are taken."
    dimensions = parameters.get("outputDimensionality")
    problem = _dimensions_problem(dimensions, "parameters")
    return problem or [(text, dimensions) for text in texts]


class EmbedAnswer:
    """The answer to one valid batchEmbedContents (Gemini API) or predict (Vertex) call."""

    stream = False

    def __init__(self, items: list[tuple[str, int]], *, vertex: bool) -> None:
        self.items = items
        self.vertex = vertex

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        body = self._predictions(behaviour) if self.vertex else self._embeddings(behaviour)
        return json_response({**body, **behaviour.extra})

    def _embeddings(self, behaviour: Behaviour) -> Json:
        out: Json = {"embeddings": [{"values": embedding_vector(*item)} for item in self.items]}
        if behaviour.usage and not behaviour.no_usage:
            out["usageMetadata"] = behaviour.usage
        return out

    def _predictions(self, behaviour: Behaviour) -> Json:
        predictions = []
        for text, size in self.items:
            embedding: Json = {"values": embedding_vector(text, size)}
            if not behaviour.no_usage:
                embedding["statistics"] = {"truncated": False, "token_count": input_tokens(text)}
            predictions.append({"embeddings": embedding})
        characters = sum(len(text) for text, _ in self.items)
        return {"predictions": predictions, "metadata": {"billableCharacterCount": characters}}

    def events(self, behaviour: Behaviour) -> SseEvents:
        return SseEvents(head=[], body=[], tail=[], error=b"")  # embeddings never stream

    def failure(self, fail: Failure) -> web.Response:
        message = f"The fake upstream was scripted to fail with status {fail.status}."
        return failure_response(fail, google_error(fail.status, message))
