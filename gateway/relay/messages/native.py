"""A Messages call tried on one of Anthropic's offerings: the body sent as the client wrote it
(`AnthropicAdapter.prepare_native`), and Anthropic's answer relayed as it wrote it but for
its `id`, Momor's (`msg_` and the call's request id). What the record and the bill read of it
(usage, stop reason) is read by the adapter's own readers, as for a translated call; a
refusal or failure moves the call on, or stops it, as any try's does
(`gateway.relay.failover`)."""

from __future__ import annotations

import logging
from functools import partial

import orjson

from billing.calls.building import call_served, estimated_tokens
from gateway.providers.anthropic import AnthropicAdapter
from gateway.providers.contract import Failure, Json
from gateway.relay.attempts import Answer, Attempt, Call
from gateway.relay.failover import exchange, readable, stream_try
from gateway.relay.messages.message import message_id
from gateway.relay.messages.native_stream import NativeStream
from gateway.request.messages.call import MessagesCall
from gateway.routing.candidates import Candidate

log = logging.getLogger(__name__)


async def native_plain(
    call: Call, asked: MessagesCall, candidate: Candidate, adapter: AnthropicAdapter
) -> Answer | None:
    attempt = Attempt(call, candidate)
    prepare = partial(adapter.prepare_native, asked.native, asked.forwarded)
    answered = await exchange(call, attempt, adapter, prepare)
    if answered is None:
        return None
    status, data = answered
    try:
        data = readable(data)
        reply, answer = adapter.reply(data), _with_id(orjson.loads(data), call.request_id)
    except Exception:  # whatever the provider sent, it is this try that fails, not the call
        log.warning("an answer of %s could not be read", candidate.offering.place, exc_info=True)
        failure = Failure(502, "The provider's answer could not be read.")
        attempt.failed(failure, spent=estimated_tokens(asked.size, len(data)))
        return None
    attempt.served(status, reply.usage)
    call_served(
        call.record, attempt.outcome(reply.usage, reply.finish_reason, reply.native_finish_reason)
    )
    return Answer(200, attempt.served_headers(), orjson.dumps(answer), native=True)


def _with_id(answer: object, request_id: str) -> Json:
    if not isinstance(answer, dict):
        raise ValueError("the provider's answer is not an object")
    answer["id"] = message_id(request_id)
    return answer


async def native_stream(
    call: Call, asked: MessagesCall, candidate: Candidate, adapter: AnthropicAdapter
) -> Answer | None:
    attempt = Attempt(call, candidate)
    prepare = partial(adapter.prepare_native, asked.native, asked.forwarded)
    relay_of = partial(NativeStream, call, attempt, translator=adapter.stream())
    return await stream_try(call, attempt, adapter, prepare, relay_of, native=True)
