"""A Messages call's candidates tried in order, as a chat call's are: an Anthropic offering is
sent the body as written (`native`); any other is sent the Chat Completions request it
translates into (`gateway.relay.failover.try_candidate`), unless the call holds what that
cannot carry, when the try fails as "cannot carry the call" and the next is tried. Failover
before output works across both alike; the answer of a translated try is written in Messages'
shape by the entry (`gateway.edge.messages`)."""

from __future__ import annotations

from functools import partial

from gateway.providers.anthropic import AnthropicAdapter
from gateway.relay.attempts import Answer, Attempt, Call
from gateway.relay.failover import adapter_of, each_candidate, try_candidate, uncarried
from gateway.relay.messages.native import native_plain, native_stream
from gateway.request.messages.call import MessagesCall
from gateway.routing.candidates import Candidate


async def answer_messages(call: Call, asked: MessagesCall) -> Answer:
    """Try the candidates in order; the first that answers serves the call."""
    return await each_candidate(call, partial(_try, call, asked))


async def _try(call: Call, asked: MessagesCall, candidate: Candidate) -> Answer | None:
    adapter = adapter_of(candidate)
    if isinstance(adapter, AnthropicAdapter):
        native = native_stream if asked.options.stream else native_plain
        return await native(call, asked, candidate, adapter)
    if asked.uncarried:
        uncarried(call, Attempt(call, candidate), asked.uncarried)
        return None
    return await try_candidate(call, asked, candidate)
