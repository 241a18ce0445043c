"""OpenAI's Responses API for the fake upstream: `POST .../responses` (on OpenAI's path and
Azure's v1 path), its request checks, the plain Response and the SSE stream of `response.*`
events, shaped like api.openai.com's (each event named on its `event:` line, numbered by its
`sequence_number`).

It turns a `Behaviour` into wire bytes as `fake_openai` does for chat: `text`, `chunks`,
`reasoning` (a reasoning item, its text as the summary), `tool_calls` (function calls),
`finish_reason` `length` (status `incomplete`), `usage` (merged into the usage: `input_tokens`,
`output_tokens`...), `no_usage`, `extra` (merged into the Response), `response` (the whole
plain body); and the failures: `fail` (and `fail_times`), `delay_first_byte`, `drop_after`,
`stream_error_after` (OpenAI's `error` then `response.failed`), `raw_body`, `inject`. A
stream's counted events (`drop_after`, `stream_error_after`, `inject.after`) are those between
`response.in_progress` and `response.completed`.

Tokens are counted as for chat: the input's words (instructions included), at least 1; one
output token per streamed piece. It refuses what OpenAI refuses with store off and Momor must
never send: a `previous_response_id` (`previous_response_not_found`), and a reasoning item
whose `encrypted_content` OpenAI did not write (`invalid_encrypted_content`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import orjson
from aiohttp import web

from testkit.fake_openai import (
    NOT_JSON,
    Invalid,
    completion_tokens,
    failure_body,
    mid_stream,
    openai_route,
)
from testkit.fake_upstream import (
    Behaviour,
    Failure,
    Json,
    SseEvents,
    ToolCall,
    failure_response,
    json_response,
)

ENCRYPTED = "gAAAAfake-openai-encrypted-reasoning"


def register(app: web.Application) -> None:
    app.router.add_post("/{prefix:(?:.*/)?}responses", responses)


def _check(body: object) -> Json | Invalid:
    """The body if it is a Responses call the fake answers, else OpenAI's 400 for it."""
    if body is NOT_JSON or not isinstance(body, dict):
        return Invalid("We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return Invalid(
            "Missing required parameter: 'model'.", "model", "missing_required_parameter"
        )
    previous = body.get("previous_response_id")
    if previous is not None:
        return Invalid(
            f"Previous response with id '{previous}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        )
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        content = item.get("encrypted_content") if isinstance(item, dict) else None
        if isinstance(content, str) and not content.startswith("gAAAA"):
            return Invalid(
                "The encrypted content could not be verified.",
                f"input[{index}].encrypted_content",
                "invalid_encrypted_content",
            )
    return body


def input_tokens(body: Json) -> int:
    """The words of every text the call holds (instructions included), at least 1."""
    return max(1, sum(len(text.split()) for text in _texts(body)))


def _texts(body: Json) -> Iterator[str]:
    if isinstance(body.get("instructions"), str):
        yield body["instructions"]
    items = body.get("input")
    if isinstance(items, str):
        yield items
        return
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        content = item.get("content", item.get("output"))
        if isinstance(content, str):
            yield content
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


class ResponsesAnswer:
    """The answers to one valid Responses call."""

    def __init__(self, body: Json) -> None:
        self.body = body
        self.model: str = body["model"]
        self.stream = body.get("stream") is True
        include = body.get("include")
        self.encrypted = isinstance(include, list) and "reasoning.encrypted_content" in include
        self.id = f"resp_{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.input_tokens = input_tokens(body)

    def response(self, behaviour: Behaviour, status: str, output: list[Json]) -> Json:
        out: Json = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": self.body.get("instructions"),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "store": self.body.get("store", True),
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": self.body.get("tools", []),
            "usage": None,
        }
        return {**out, **behaviour.extra}

    def plain(self, behaviour: Behaviour) -> web.Response:
        if behaviour.response is not None:
            return json_response(behaviour.response)
        return json_response(self.finished(behaviour))

    def finished(self, behaviour: Behaviour) -> Json:
        """The Response once done: every item, its status, its usage."""
        output = [item for item, _ in self.items(behaviour)]
        status = "incomplete" if behaviour.finish_reason == "length" else "completed"
        out = self.response(behaviour, status, output)
        if status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens"}
        if not behaviour.no_usage:
            out["usage"] = self.usage(behaviour)
        return out

    def usage(self, behaviour: Behaviour) -> Json:
        output = completion_tokens(behaviour)
        usage: Json = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": len(behaviour.reasoning_pieces)},
            "total_tokens": self.input_tokens + output,
        }
        usage.update(behaviour.usage)
        return usage

    def items(self, behaviour: Behaviour) -> list[tuple[Json, list[Json]]]:
        """Each output item done, with the events that stream it between its added and done."""
        found: list[tuple[Json, list[Json]]] = []
        if behaviour.reasoning is not None:
            found.append(self._reasoning(len(found), behaviour))
        if behaviour.content is not None:
            found.append(self._message(len(found), behaviour))
        for call in behaviour.tool_calls:
            found.append(self._call(len(found), call))
        return found

    def _reasoning(self, index: int, behaviour: Behaviour) -> tuple[Json, list[Json]]:
        rid, text = f"rs_fake_{index}", behaviour.reasoning or ""
        item: Json = {"id": rid, "type": "reasoning",
                      "summary": [{"type": "summary_text", "text": text}]}  # fmt: skip
        if self.encrypted:
            item["encrypted_content"] = ENCRYPTED
        on = {"item_id": rid, "output_index": index, "summary_index": 0}
        part = {"type": "summary_text", "text": ""}
        events = [
            {"type": "response.reasoning_summary_part.added", **on, "part": part},
            *({"type": "response.reasoning_summary_text.delta", **on, "delta": piece}
              for piece in behaviour.reasoning_pieces),
            {"type": "response.reasoning_summary_text.done", **on, "text": text},
            {"type": "response.reasoning_summary_part.done", **on, "part": {**part, "text": text}},
        ]  # fmt: skip
        return item, events

    def _message(self, index: int, behaviour: Behaviour) -> tuple[Json, list[Json]]:
        mid, text = f"msg_fake_{index}", behaviour.content or ""
        part = {"type": "output_text", "annotations": [], "text": text}
        item = {"id": mid, "type": "message", "status": "completed", "content": [part],
                "role": "assistant"}  # fmt: skip
        on = {"item_id": mid, "output_index": index, "content_index": 0}
        events = [
            {"type": "response.content_part.added", **on, "part": {**part, "text": ""}},
            *({"type": "response.output_text.delta", **on, "delta": piece, "logprobs": []}
              for piece in behaviour.content_pieces),
            {"type": "response.output_text.done", **on, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **on, "part": part},
        ]  # fmt: skip
        return item, events

    def _call(self, index: int, call: ToolCall) -> tuple[Json, list[Json]]:
        fid = f"fc_fake_{index}"
        item = {"id": fid, "type": "function_call", "status": "completed",
                "arguments": call.arguments, "call_id": call.id, "name": call.name}  # fmt: skip
        on = {"item_id": fid, "output_index": index}
        events = [
            *({"type": "response.function_call_arguments.delta", **on, "delta": piece}
              for piece in call.argument_pieces),
            {"type": "response.function_call_arguments.done", **on, "arguments": call.arguments},
        ]  # fmt: skip
        return item, events

    def events(self, behaviour: Behaviour) -> SseEvents:
        head = [self._lifecycle(kind, behaviour) for kind in ("response.created",
                                                              "response.in_progress")]  # fmt: skip
        body: list[Json] = []
        for index, (item, inner) in enumerate(self.items(behaviour)):
            added = {**item, "status": "in_progress"} if "status" in item else item
            added = _started(added)
            body.append({"type": "response.output_item.added", "output_index": index,
                         "item": added})  # fmt: skip
            body += inner
            body.append({"type": "response.output_item.done", "output_index": index,
                         "item": item})  # fmt: skip
        done = {"type": _ending(behaviour), "response": self.finished(behaviour)}
        numbered = _numbered([*head, *body, done])
        cut = 2 + (behaviour.stream_error_after or 0)
        return SseEvents(
            head=numbered[:2],
            body=numbered[2:-1],
            tail=numbered[-1:],
            error=self._error(behaviour, min(cut, len(numbered) - 1)),
        )

    def _lifecycle(self, kind: str, behaviour: Behaviour) -> Json:
        return {"type": kind, "response": self.response(behaviour, "in_progress", [])}

    def _error(self, behaviour: Behaviour, sequence: int) -> bytes:
        """OpenAI's mid-stream failure: `error`, then `response.failed`."""
        message = mid_stream(behaviour)
        error = {"type": "server_error", "code": "server_error", "message": message,
                 "param": None}  # fmt: skip
        failed = self.response(behaviour, "failed", [])
        failed["error"] = {"code": "server_error", "message": message}
        return _sse({"type": "error", "sequence_number": sequence, "error": error}) + _sse(
            {"type": "response.failed", "sequence_number": sequence + 1, "response": failed}
        )

    def failure(self, fail: Failure) -> web.Response:
        return failure_response(fail, failure_body(fail))


def _started(item: Json) -> Json:
    """An item as `response.output_item.added` shows it: nothing generated yet."""
    if item["type"] == "message":
        return {**item, "content": []}
    if item["type"] == "function_call":
        return {**item, "arguments": ""}
    return {**item, "summary": []}


def _ending(behaviour: Behaviour) -> str:
    return "response.incomplete" if behaviour.finish_reason == "length" else "response.completed"


def _numbered(events: list[Json]) -> list[bytes]:
    return [_sse({"type": e["type"], "sequence_number": n, **e}) for n, e in enumerate(events)]


def _sse(event: Json) -> bytes:
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


responses = openai_route(_check, ResponsesAnswer)
