"""OpenAI's Responses API spoken natively (OpenAI's own, and Azure's v1 API, which serves the
same route): the call goes as the client wrote it but for `model` (the offering's upstream id;
on Azure the deployment name), `store` (always false: Momor keeps nothing and has the provider
keep nothing), and the reasoning items Momor wrote for another provider, left out (their
`encrypted_content` is Momor's, which OpenAI cannot read). The answer is relayed as written,
but for its `id` and `model` (Momor's); what Momor reads of it is its usage and its status,
for the record and the bill."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.providers.contract import Failure, Json, Usage, openai_error
from gateway.providers.responses.wire import LIFECYCLE, MOMOR_REASONING, usage_of

# The events that show the client something: a failure before any of them moves the call to
# the next candidate.
SHOWING = frozenset(
    {
        "response.output_text.delta", "response.refusal.delta",
        "response.function_call_arguments.delta", "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta", "response.output_item.done", "response.completed",
        "response.incomplete",
    }
)  # fmt: skip
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


def upstream_body(request: Json, upstream_id: str) -> bytes:
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


class NativeEvents:
    """A Responses stream read event by event: what the record needs of it (its usage, its
    end, its failure) and the last sequence number, for the events Momor may end it on."""

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.finish = ""
        self.native_finish = ""
        self.finished = False
        self.failure: Failure | None = None
        self.failed_sent = False
        self.sequence = -1
        self.response: Json = {}
        self.shown_chars = 0

    def read(self, data: str) -> Json:
        """One event's JSON, noted; raises ValueError for one that cannot be read."""
        event = orjson.loads(data)
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise ValueError("a stream event is not a Responses event")
        sequence = event.get("sequence_number")
        if isinstance(sequence, int) and not isinstance(sequence, bool):
            self.sequence = max(self.sequence, sequence)
        delta = event.get("delta")
        self.shown_chars += len(delta) if isinstance(delta, str) else 0
        self._noted(event["type"], event)
        return event

    def _noted(self, kind: str, event: Json) -> None:
        response = event.get("response")
        if kind in LIFECYCLE and isinstance(response, dict):
            self.response = response
            self.usage = usage_of(response.get("usage")) or self.usage
        if kind in ENDINGS and isinstance(response, dict):
            self.finished = True
            self.finish, self.native_finish = finish_of(response)
        elif kind == "response.failed" and isinstance(response, dict):
            self.failure = self.failure or response_failure(response)
            self.failed_sent = True
        elif kind == "error":
            self.failure = self.failure or error_failure(event.get("error", event))


def shows(event: Json) -> bool:
    """Whether an event shows the client something."""
    return event.get("type") in SHOWING
