"""A Responses call's candidates tried in order, as a chat call's are: an offering whose API
speaks Responses (OpenAI's own, Azure's v1 API) is sent the call as written (`native`); any
other is sent the Chat Completions request it translates into
(`gateway.relay.failover.try_candidate`), its answer written in the Responses API's shape by
the entry (`gateway.edge.responses`). Failover before output works across both alike.

A call holding what only OpenAI's own API carries (hosted tools...) is tried on OpenAI's own
offerings alone: the others are left out of its candidates, each with its reason in the
record's routing, and a call left with none is refused with a 400."""

from __future__ import annotations

from functools import partial

from gateway.providers.openai import OpenAIAdapter
from gateway.relay.attempts import Answer, Call
from gateway.relay.failover import adapter_of, each_candidate, try_candidate
from gateway.relay.responses.native import native_plain, native_stream
from gateway.request.responses import ResponsesCall, openai_alone
from gateway.routing.candidates import Candidate

OPENAI = "openai"


async def respond(call: Call, asked: ResponsesCall) -> Answer:
    """Try the candidates in order; the first that answers serves the call."""
    if asked.openai_only:
        _on_openai_alone(call, asked.openai_only)
    return await each_candidate(call, partial(_try, call, asked))


async def _try(call: Call, asked: ResponsesCall, candidate: Candidate) -> Answer | None:
    adapter = adapter_of(candidate)
    if isinstance(adapter, OpenAIAdapter) and adapter.speaks_responses:
        native = native_stream if asked.options.stream else native_plain
        return await native(call, asked, candidate, adapter)
    return await try_candidate(call, asked, candidate)


def _on_openai_alone(call: Call, reason: str) -> None:
    """The candidates narrowed to OpenAI's own offerings; the others noted as left out."""
    kept = [c for c in call.candidates if c.offering.provider.api == OPENAI]
    if not kept:
        raise openai_alone(reason)
    left = [
        {
            "model": c.offering.model_id,
            "provider": c.offering.place,
            "reason": f"the call holds {reason}, which only OpenAI's own API carries",
        }
        for c in call.candidates
        if c.offering.provider.api != OPENAI
    ]
    routing = call.record.routing
    routing["excluded"] = [*routing.get("excluded", []), *left]
    call.candidates = kept
