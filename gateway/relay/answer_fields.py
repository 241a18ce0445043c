"""What Momor adds to an answer beside the provider's fields: `provider` (the provider's display
name in the catalog), Momor's usage fields (`gateway.relay.answer_usage`), the usage Momor estimates
where the provider sent none, and `momor_metadata` where the call asked for it
(`gateway.relay.metadata`). A Chat Completions provider's choices come back as it wrote them;
a translated answer's carry `native_finish_reason`, written by its adapter."""

from __future__ import annotations

from typing import Any

from gateway.providers.contract import ChatCompletionChunk, Reply, envelope
from gateway.relay.answer_usage import estimated_usage
from gateway.relay.attempts import Attempt
from gateway.relay.metadata import served_metadata


def plain_answer(reply: Reply, attempt: Attempt) -> None:
    """A plain answer's body completed: usage (estimated where the provider sent none, so the
    call is billed on the same counts it shows), provider, metadata."""
    body = reply.body
    if reply.usage is None:
        reply.usage = estimated_usage(attempt.call.asked.size, _answer_chars(body["choices"]))
        body["usage"] = reply.usage.as_openai()
    usage = body.get("usage")
    if isinstance(usage, dict):
        attempt.add_cost(usage, estimated=reply.usage.estimated, parsed=reply.usage)
    body["provider"] = attempt.candidate.offering.provider.label
    metadata = served_metadata(attempt.call)
    if metadata is not None:
        body["momor_metadata"] = metadata


def estimated_usage_chunk(attempt: Attempt, delivered_chars: int) -> ChatCompletionChunk:
    """The usage chunk a stream owes a client that asked for usage when the provider sent none."""
    usage = estimated_usage(attempt.call.asked.size, delivered_chars).as_openai()
    attempt.add_cost(usage, estimated=True)
    return {**closing_chunk(attempt), "usage": usage}


def closing_chunk(attempt: Attempt) -> ChatCompletionChunk:
    """A chunk without choices, as the last ones of a stream are."""
    call, offering = attempt.call, attempt.candidate.offering
    chunk = envelope([])
    chunk["id"], chunk["created"] = call.request_id, call.created
    chunk["model"], chunk["provider"] = offering.model_id, offering.provider.label
    return chunk


def _answer_chars(choices: list[Any]) -> int:
    """The characters an answer shows: content, reasoning and tool call arguments."""
    total = 0
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        for name in ("content", "reasoning"):
            value = message.get(name)
            total += len(value) if isinstance(value, str) else 0
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            total += len(arguments) if isinstance(arguments, str) else 0
    return total
