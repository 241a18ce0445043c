"""OpenAI's Responses API spoken natively (OpenAI's own, and Azure's v1 API, which serves the
same route): the call goes as the client wrote it but for `model` (the offering's upstream id;
on Azure the deployment name), `store` (always false: Momor keeps nothing and has the provider
keep nothing), and the reasoning items Momor wrote for another provider, left out (their
`encrypted_content` is Momor's, which OpenAI cannot read). The answer is relayed as written,
but for its `id` and `model` (Momor's); what Momor reads of it is its usage and its status,
for the record and the bill, its stream read as Chat Completions chunks by `ResponsesStream`
(which is how the relay knows what a stream has shown, and when it failed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.providers.contract import (
    ChatCompletionChunk,
    Event,
    Failure,
    Json,
    StreamFailed,
    StreamTranslator,
    Usage,
    envelope,
    openai_error,
)
from gateway.providers.responses.wire import LIFECYCLE, MOMOR_REASONING, usage_of

TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
ENDINGS = ("response.completed", "response.incomplete")
CALLS = ("function_call", "custom_tool_call")


def native_request(body: dict[str, Any]) -> Json:
    """The call for OpenAI's own API: `store` false, Momor's reasoning items left out (its
    routing fields are the caller's to leave out)."""
    out = dict(body)
    out["store"] = False
    items = out.get("input")
    if isinstance(items, list) and any(map(_momor_reasoning, items)):
        out["input"] = [item for item in items if not _momor_reasoning(item)]
    return out


def _momor_reasoning(item: object) -> bool:
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return False
    content = item.get("encrypted_content")
    return isinstance(content, str) and content.startswith(MOMOR_REASONING)


def upstream_body(request: Mapping[str, object], upstream_id: str) -> bytes:
    return orjson.dumps({**request, "model": upstream_id})


def finish_of(response: Json) -> tuple[str, str]:
    """A Response's end in Chat Completions' terms (what the record keeps), and its own."""
    status = str(response.get("status") or "")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return ("content_filter" if reason == "content_filter" else "length"), str(reason or status)
    output = response.get("output")
    items = output if isinstance(output, list) else []
    calls = any(isinstance(i, dict) and i.get("type") in CALLS for i in items)
    return ("tool_calls" if calls else "stop"), status


@dataclass(slots=True)
class NativeReply:
    """A plain Response read: its body (to relay), usage, end, and its failure if it failed."""

    body: Json
    usage: Usage | None
    finish: str
    native_finish: str
    failure: Failure | None = None


def native_reply(data: bytes) -> NativeReply:
    """A 2xx answer read; raises ValueError for one that is not a Response."""
    body = orjson.loads(data)
    if not isinstance(body, dict) or body.get("object") != "response":
        raise ValueError("the provider's answer is not a Response")
    finish, native = finish_of(body)
    failure = response_failure(body) if body.get("status") == "failed" else None
    return NativeReply(body, usage_of(body.get("usage")), finish, native, failure)


def response_failure(response: Json) -> Failure:
    """Why a Response failed (its `error`)."""
    return error_failure(response.get("error"))


def error_failure(error: object) -> Failure:
    """An `error` object of the Responses API (a Response's, or an `error` event's) as a
    failure; the next candidate may be tried after it."""
    found = error if isinstance(error, dict) else {}
    message = str(found.get("message") or "The provider failed to answer.")
    return Failure(None, message, openai_error(found, message))


class ResponsesStream(StreamTranslator):
    """A Responses stream read as Chat Completions chunks, for what the relay keeps of it
    (what it shows, its usage, its end): its events themselves are relayed as written. An
    `error` or `response.failed` event raises StreamFailed (it is not relayed: Momor ends the
    stream on its own). The last sequence number relayed and the Response as last sent are
    kept, for the events Momor ends a broken stream on."""

    def __init__(self) -> None:
        super().__init__()
        self.sequence = -1
        self.response: Json = {}
        self.calls: dict[int, int] = {}
        """Each function call's tool call index, by its output index."""

    def feed(self, event: Event) -> list[ChatCompletionChunk]:
        data = orjson.loads(event.data)
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            raise ValueError("a stream event is not a Responses event")
        kind, response = data["type"], data.get("response")
        if kind == "error":
            raise StreamFailed(error_failure(data.get("error", data)))
        if kind == "response.failed":
            raise StreamFailed(response_failure(response if isinstance(response, dict) else {}))
        sequence = data.get("sequence_number")
        if isinstance(sequence, int) and not isinstance(sequence, bool):
            self.sequence = max(self.sequence, sequence)
        if kind in LIFECYCLE and isinstance(response, dict):
            self.response = response
            self.state.usage = usage_of(response.get("usage")) or self.state.usage
        if kind in ENDINGS and isinstance(response, dict):
            return [self._ended(response)]
        return self._delta(kind, data)

    def _ended(self, response: Json) -> ChatCompletionChunk:
        state = self.state
        state.finished = True
        state.finish_reason, state.native_finish_reason = finish_of(response)
        return envelope([{"index": 0, "delta": {}, "finish_reason": state.finish_reason}])

    def _delta(self, kind: str, data: Json) -> list[ChatCompletionChunk]:
        delta: Json | None = None
        text = data.get("delta")
        if kind in TEXT_DELTAS and isinstance(text, str):
            delta = {"content": text}
        elif kind in REASONING_DELTAS and isinstance(text, str):
            delta = {"reasoning": text}
        elif kind == "response.function_call_arguments.delta" and isinstance(text, str):
            index = self.calls.get(_int(data.get("output_index")), 0)
            delta = {"tool_calls": [{"index": index, "function": {"arguments": text}}]}
        elif kind == "response.output_item.added":
            delta = self._call(data)
        if delta is None:
            return []
        return [envelope([{"index": 0, "delta": delta, "finish_reason": None}])]

    def _call(self, data: Json) -> Json | None:
        item = data.get("item")
        if not isinstance(item, dict) or item.get("type") not in CALLS:
            return None
        index = self.calls[_int(data.get("output_index"))] = len(self.calls)
        function = {"name": str(item.get("name") or ""), "arguments": ""}
        call = {"index": index, "id": item.get("call_id"), "type": "function"}
        return {"tool_calls": [{**call, "function": function}]}


def _int(value: object) -> int:
    return value if isinstance(value, int) else -1
