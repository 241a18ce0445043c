"""One call's tries: candidates tried in order until one answers, the answer relayed plain or
handed to `gateway.relay.streaming`. Whether a failed try lets the next candidate be tried is the
failure's to say (`Failure.moves_on`); a plain answer's record is handed to billing by
`gateway.edge.completion`, a stream's by its relay when the stream ends.

What a provider sends is never trusted to be well formed: a plain answer that cannot be read
moves the call to the next candidate. Invalid UTF-8 is read as U+FFFD."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson
from django.conf import settings

from billing.calls.building import call_served, estimated_tokens
from billing.calls.records import TokenCounts
from gateway.providers import adapter_for
from gateway.providers.contract import (
    Adapter,
    CannotCarry,
    Failure,
    Reply,
    Target,
    UpstreamRequest,
)
from gateway.relay.admit import Renewal
from gateway.relay.answer_fields import plain_answer
from gateway.relay.attempts import Answer, Attempt, Call, tokens_of, transport_message
from gateway.relay.streaming import StreamRelay
from gateway.request.answer_rules import RuleBroken
from gateway.request.call import ChatCall
from gateway.request.errors import GatewayError, providers_unavailable, unsupported_parameter
from gateway.routing.candidates import Candidate
from gateway.upstream.credentials import CredentialsFailed, ready
from gateway.upstream.interface import Response, UpstreamError
from gateway.upstream.pool import send

log = logging.getLogger(__name__)


async def answer(call: Call, chat: ChatCall) -> Answer:
    """Try the candidates in order; the first that answers serves the call."""
    return await each_candidate(call, partial(try_candidate, call, chat))


async def each_candidate(
    call: Call, try_one: Callable[[Candidate], Awaitable[Answer | None]]
) -> Answer:
    """`try_one` each candidate in order, the reservation renewed as they go; the first answer
    serves the call, and when none answers, the last failure says what the call answers."""
    call.renewal = Renewal(call.record.ticket, call.started)
    for candidate in call.candidates:
        call.renewal.tick()
        answered = await try_one(candidate)
        if answered is not None:
            return answered
    raise final_error(call)


async def exchange(
    call: Call, attempt: Attempt, adapter: Adapter, prepare: Callable[[Target], UpstreamRequest]
) -> tuple[int, bytes] | None:
    """A plain try's request sent (`prepare`) and its whole 2xx answer read: (status, body);
    None when the try failed (the failure is noted on `attempt`; a provider's refusal that
    the call cannot move past is raised as its answer)."""
    response = await open_try(call, attempt, prepare)
    if response is None:
        return None
    try:
        data = await read_all(response)
    except (UpstreamError, TimeoutError) as exc:
        attempt.failed(Failure(None, transport_message(exc)))
        return None
    finally:
        await response.close()
    if response.status_code >= 300:
        refused(attempt, adapter.failure(response.status_code, data))
        return None
    return response.status_code, data


async def try_candidate(call: Call, chat: ChatCall, candidate: Candidate) -> Answer | None:
    """One candidate tried with the call's Chat Completions request, plain or streamed; None
    when the try failed and the next candidate may be tried."""
    try_one = _try_stream if chat.options.stream else _try_plain
    return await try_one(call, chat, candidate)


async def _try_plain(call: Call, chat: ChatCall, candidate: Candidate) -> Answer | None:
    adapter, attempt = adapter_of(candidate), Attempt(call, candidate)
    answered = await exchange(call, attempt, adapter, partial(adapter.prepare, chat.request))
    if answered is None:
        return None
    status, data = answered
    read = _read_reply(adapter, data, attempt)
    if read is None:
        return None
    reply, encoded = read
    attempt.served(status, reply.usage)
    call_served(
        call.record, attempt.outcome(reply.usage, reply.finish_reason, reply.native_finish_reason)
    )
    return Answer(200, attempt.served_headers(), encoded)


def _read_reply(adapter: Adapter, data: bytes, attempt: Attempt) -> tuple[Reply, bytes] | None:
    """A plain answer translated and encoded for the client; None when the try failed: it
    broke the call's tool rules or cannot be read. The provider generated it all the same,
    so the try is billed its usage, or Momor's estimate where it cannot be read."""
    reply: Reply | None = None
    try:
        reply = adapter.reply(readable(data))
        if attempt.call.asked.options.rules is not None:
            attempt.call.asked.options.rules.hold(reply.body)
        plain_answer(reply, attempt)
        reply.body["id"] = attempt.call.request_id
        reply.body["model"] = attempt.candidate.offering.model_id
        return reply, orjson.dumps(reply.body)
    except RuleBroken as exc:
        attempt.failed(exc.failure, spent=_spent(attempt, reply, data))
    except Exception:  # whatever the provider sent, it is this try that fails, not the call
        log.warning("an answer of %s could not be read", attempt.candidate.offering.place,
                    exc_info=True)  # fmt: skip
        failure = Failure(502, "The provider's answer could not be read.")
        attempt.failed(failure, spent=_spent(attempt, reply, data))
    return None


def _spent(attempt: Attempt, reply: Reply | None, data: bytes) -> TokenCounts:
    """The tokens of an answer rejected: its usage, else about four characters a token."""
    tokens = tokens_of(reply.usage) if reply is not None else None
    return tokens or estimated_tokens(attempt.call.asked.size, len(data))


def readable(data: bytes) -> bytes:
    """The answer with invalid UTF-8 replaced by U+FFFD (checked only where it is not ASCII)."""
    if data.isascii():
        return data
    return data.decode(errors="replace").encode()


async def _try_stream(call: Call, chat: ChatCall, candidate: Candidate) -> Answer | None:
    adapter, attempt = adapter_of(candidate), Attempt(call, candidate)
    translator = adapter.stream()
    if chat.options.rules is not None:
        translator = chat.options.rules.stream(translator)
    relay_of = partial(StreamRelay, call, attempt, translator=translator)
    return await stream_try(
        call, attempt, adapter, partial(adapter.prepare, chat.request), relay_of
    )


async def stream_try(
    call: Call,
    attempt: Attempt,
    adapter: Adapter,
    prepare: Callable[[Target], UpstreamRequest],
    relay_of: Callable[..., StreamRelay],
    *,
    native: bool = False,
) -> Answer | None:
    """A streamed try sent (`prepare`) and its stream opened by the relay `relay_of` makes of
    the response: the answer once the stream has shown something; None when the try failed
    before (the failure is noted on `attempt`; a provider's refusal that the call cannot
    move past is raised as its answer). `native`: the stream is relayed in its own API's
    shape, not Chat Completions'."""
    response = await open_try(call, attempt, prepare)
    if response is None:
        return None
    if response.status_code >= 300:
        data = await read_failure(response)
        refused(attempt, adapter.failure(response.status_code, data))
        return None
    relay = relay_of(response=response)
    try:
        opening = await relay.opening()
    except BaseException:
        await response.close()
        raise
    if opening is None:
        await response.close()
        return None
    headers = attempt.served_headers() | {"cache-control": "no-cache"}
    rest = relay.rest(opening)
    await anext(rest)
    return Answer(200, headers, rest, native=native)


async def open_try(
    call: Call, attempt: Attempt, prepare: Callable[[Target], UpstreamRequest]
) -> Response | None:
    """The credential made ready, the call translated (`prepare`) and sent; None when the try
    failed."""
    try:
        made = await ready(attempt.candidate.offering.provider.api, attempt.target)
        attempt.secrets = made.secrets
        prepared = prepare(made.target)
    except CredentialsFailed as exc:
        attempt.failed(exc.failure)
        return None
    except CannotCarry as exc:
        uncarried(call, attempt, str(exc))
        return None
    except Exception as exc:  # a value the translation could not read fails this offering alone
        log.warning("the call could not be translated for %s", attempt.candidate.offering.place,
                    exc_info=True)  # fmt: skip
        uncarried(call, attempt, f"a value it could not translate ({type(exc).__name__})")
        return None
    try:
        return await send(
            prepared.url, prepared.headers, prepared.body, _head_timeout(call.asked.options.stream)
        )
    except (UpstreamError, TimeoutError) as exc:
        attempt.failed(Failure(None, transport_message(exc)))
        return None


def _head_timeout(stream: bool) -> float:
    """How long a try waits for the provider's response head: a plain answer's comes with the
    whole answer, a stream's at once (a silent one fails over)."""
    if stream:
        return float(settings.MOMOR_UPSTREAM_STREAM_HEADERS_TIMEOUT)
    return float(settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT)


def uncarried(call: Call, attempt: Attempt, reason: str) -> None:
    attempt.failed(Failure(None, f"cannot carry the call: {reason}"), decisive=False)
    call.uncarried = reason


async def read_all(response: Response) -> bytes:
    return await response.read(settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT)


async def read_failure(response: Response) -> bytes:
    try:
        return await read_all(response)
    except (UpstreamError, TimeoutError):
        return b""
    finally:
        await response.close()


def refused(attempt: Attempt, failure: Failure) -> Answer | None:
    """A provider's non-2xx: the next candidate's turn, unless the failure says the call
    cannot move on (then it is the call's answer at once)."""
    failure = attempt.failed(failure)
    if not failure.moves_on:
        raise GatewayError(failure.status or 502, **_provider_fields(failure))
    return None


def final_error(call: Call) -> GatewayError:
    """The answer when every candidate failed: it follows the last one."""
    if call.last is None:
        reason = f" ({call.uncarried})" if call.uncarried else ""
        return unsupported_parameter(
            f"Models matched, and none of them could carry the call.{reason}"
        )
    candidate, failure = call.last
    provider = candidate.offering.provider.name
    if candidate.key_source == "own" and failure.status in (401, 403):
        return GatewayError(
            502, f"The provider {provider} refused your own key for it.", type="upstream_error"
        )
    if candidate.key_source == "own" and failure.status == 429:
        return GatewayError(
            429,
            f"The provider {provider} is limiting your own key: too many requests.",
            type="rate_limit_error",
            code="rate_limit_exceeded",
        )
    status = _error_status(failure.status)
    if failure.openai_shaped:
        return GatewayError(status, **_provider_fields(failure))
    if status >= 500 and failure.status is not None:
        return GatewayError(status, f"{provider}: {failure.message}", type="server_error")
    return providers_unavailable()


def _error_status(status: int | None) -> int:
    """A provider's status as the call's: an error status passes, anything else (none, a
    redirect, a number a provider wrote in its error body) is a 502."""
    return status if status is not None and 400 <= status <= 599 else 502


def _provider_fields(failure: Failure) -> dict[str, Any]:
    error = failure.error
    if error is None:
        return {"message": failure.message, "type": "invalid_request_error"}
    return {
        "message": failure.message,
        "type": error["type"] or "invalid_request_error",
        "param": error["param"],
        "code": error["code"],
    }


def adapter_of(candidate: Candidate) -> Adapter:
    adapter = adapter_for(candidate.offering.provider.api)
    if adapter is None:
        raise GatewayError(
            500, f"No adapter speaks {candidate.offering.provider.api}.", type="server_error"
        )
    return adapter
