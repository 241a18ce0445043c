"""A Responses call tried on an offering whose API speaks Responses (OpenAI's own, Azure's v1
API): the call sent as the client wrote it (`OpenAIAdapter.prepare_responses`: `store` false,
Momor's fields and reasoning items left out), and the provider's answer relayed as it wrote it
but for its `id` (`resp_` and the call's request id) and `model` (Momor's). What the record
and the bill read of it is its usage and its status; a refusal or failure moves the call on,
or stops it, as any try's does (`gateway.relay.failover`), and so does a plain Response whose
status is `failed`."""

from __future__ import annotations

import logging
from functools import partial

import orjson

from billing.calls.building import call_served, estimated_tokens
from gateway.providers.contract import Failure
from gateway.providers.openai import OpenAIAdapter
from gateway.providers.responses.native import ResponsesStream, native_reply
from gateway.providers.responses.wire import response_id
from gateway.relay.attempts import Answer, Attempt, Call, tokens_of
from gateway.relay.failover import exchange, readable, stream_try
from gateway.relay.responses.native_stream import NativeResponses
from gateway.request.responses import ResponsesCall
from gateway.routing.candidates import Candidate

log = logging.getLogger(__name__)


async def native_plain(
    call: Call, asked: ResponsesCall, candidate: Candidate, adapter: OpenAIAdapter
) -> Answer | None:
    attempt = Attempt(call, candidate)
    prepare = partial(adapter.prepare_responses, asked.native)
    answered = await exchange(call, attempt, adapter, prepare)
    if answered is None:
        return None
    status, data = answered
    try:
        reply = native_reply(readable(data))
    except Exception:  # whatever the provider sent, it is this try that fails, not the call
        log.warning("an answer of %s could not be read", candidate.offering.place, exc_info=True)
        failure = Failure(502, "The provider's answer could not be read.")
        attempt.failed(failure, spent=estimated_tokens(asked.size, len(data)))
        return None
    if reply.failure is not None:
        attempt.failed(reply.failure, spent=tokens_of(reply.usage))
        return None
    attempt.served(status, reply.usage)
    call_served(call.record, attempt.outcome(reply.usage, reply.finish, reply.native_finish))
    reply.body["id"] = response_id(call.request_id)
    reply.body["model"] = candidate.offering.model_id
    return Answer(200, attempt.served_headers(), orjson.dumps(reply.body), native=True)


async def native_stream(
    call: Call, asked: ResponsesCall, candidate: Candidate, adapter: OpenAIAdapter
) -> Answer | None:
    attempt = Attempt(call, candidate)
    prepare = partial(adapter.prepare_responses, asked.native)
    relay_of = partial(NativeResponses, call, attempt, reader=ResponsesStream())
    return await stream_try(call, attempt, adapter, prepare, relay_of, native=True)
