"""One call's attempts: candidates tried in order until one answers, the answer relayed plain
or streamed, and a stream's record handed to billing when it ends (a plain answer's by
`gateway.completion`).

What a provider sends is never trusted to be well formed: a plain answer that cannot be read,
or a stream that breaks or holds an event that cannot be read before it has shown anything,
moves the call to the next candidate; after that, the stream ends on one error chunk. Invalid
UTF-8 is read as U+FFFD."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings

from accounts.redaction import scrub
from billing.cost import call_cost
from billing.recording import record_call
from billing.records import AttemptRecord, CallRecord, TokenCounts
from gateway.admission import Renewal
from gateway.errors import GatewayError, providers_unavailable, unsupported_parameter
from gateway.options import CallOptions
from gateway.providers import adapter_for
from gateway.providers.base import (
    Adapter,
    CannotCarry,
    Failure,
    PrepareFailed,
    Reply,
    StreamFailed,
    StreamTranslator,
    Usage,
)
from gateway.routing import Candidate
from gateway.sse import DONE, Decoder, Event, encode
from gateway.upstream import Response, UpstreamError, send

log = logging.getLogger(__name__)

RETRYABLE_4XX = frozenset({401, 403, 408, 429})
SHOWN_FIELDS = ("content", "reasoning", "tool_calls", "refusal", "audio", "reasoning_details")


@dataclass(slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes | AsyncIterator[bytes]


@dataclass(slots=True)
class Call:
    request_id: str
    body: dict[str, Any]
    body_size: int
    options: CallOptions
    candidates: list[Candidate]
    record: CallRecord
    started: float = field(default_factory=time.monotonic)
    created: int = field(default_factory=lambda: int(time.time()))
    last: tuple[Candidate, Failure] | None = None
    uncarried: str = ""
    renewal: Renewal | None = None

    def elapsed_ms(self, since: float | None = None) -> int:
        return int((time.monotonic() - (since or self.started)) * 1000)


class Attempt:
    """One candidate tried: its record, filled in as the try goes."""

    def __init__(self, call: Call, candidate: Candidate) -> None:
        offering = candidate.offering
        self.call, self.candidate, self.started = call, candidate, time.monotonic()
        self.row = AttemptRecord(
            position=len(call.record.attempts),
            model=offering.model_id,
            provider=offering.provider.name,
            region=offering.region,
            upstream_id=offering.upstream_id,
            key_source=candidate.key_source,
            prices=offering.prices.as_dict(),
        )
        call.record.attempts.append(self.row)
        self.secrets: tuple[str, ...] = ()

    def failed(self, failure: Failure, *, decisive: bool = True) -> Failure:
        """Note a failed try; a decisive one is what the call answers if it is the last.
        Every secret sent upstream on this try is masked first: the failure returned is the
        one to answer with."""
        failure = scrubbed(failure, (self.candidate.secret, *self.secrets))
        self.row.http_status = failure.status
        self.row.error = failure.message[:2000]
        self.row.latency_ms = self.call.elapsed_ms(self.started)
        if decisive:
            self.call.last = (self.candidate, failure)
        return failure

    def served(self, status: int, usage: Usage | None) -> None:
        self.row.http_status = status
        self.row.latency_ms = self.call.elapsed_ms(self.started)
        self.row.tokens = _tokens(usage)


async def answer(call: Call) -> Answer:
    """Try the candidates in order; the first that answers serves the call."""
    try_one = _try_stream if call.options.stream else _try_plain
    call.renewal = Renewal(call.record.ticket, call.started)
    for candidate in call.candidates:
        call.renewal.tick()
        answered = await try_one(call, candidate)
        if answered is not None:
            return answered
    raise final_error(call)


async def _try_plain(call: Call, candidate: Candidate) -> Answer | None:
    adapter, attempt = _adapter(candidate), Attempt(call, candidate)
    response = await _open(call, candidate, adapter, attempt)
    if response is None:
        return None
    try:
        data = await _read_all(response)
    except (UpstreamError, TimeoutError) as exc:
        attempt.failed(Failure(None, _transport_message(exc)))
        return None
    finally:
        await response.close()
    if response.status_code >= 300:
        return _refused(call, attempt, adapter.failure(response.status_code, data))
    read = _read_reply(adapter, data, call, candidate)
    if read is None:
        attempt.failed(Failure(502, "The provider's answer could not be read."))
        return None
    reply, encoded = read
    attempt.served(response.status_code, reply.usage)
    _served(call, candidate, reply.usage, reply.finish_reason, reply.native_finish_reason)
    return Answer(200, _served_headers(candidate), encoded)


def _read_reply(
    adapter: Adapter, data: bytes, call: Call, candidate: Candidate
) -> tuple[Reply, bytes] | None:
    """A plain answer translated and encoded for the client; None when it cannot be read."""
    try:
        reply = adapter.reply(_readable(data))
        _add_cost(reply.body.get("usage"), candidate)
        reply.body["id"] = call.request_id
        reply.body["model"] = candidate.offering.model_id
        return reply, orjson.dumps(reply.body)
    except Exception:  # whatever the provider sent, it is this try that fails, not the call
        log.warning("an answer of %s could not be read", candidate.offering.place, exc_info=True)
        return None


def _readable(data: bytes) -> bytes:
    """The answer with invalid UTF-8 replaced by U+FFFD (checked only where it is not ASCII)."""
    if data.isascii():
        return data
    return data.decode(errors="replace").encode()


async def _try_stream(call: Call, candidate: Candidate) -> Answer | None:
    adapter, attempt = _adapter(candidate), Attempt(call, candidate)
    response = await _open(call, candidate, adapter, attempt)
    if response is None:
        return None
    if response.status_code >= 300:
        data = await _read_failure(response)
        return _refused(call, attempt, adapter.failure(response.status_code, data))
    relay = StreamRelay(call, candidate, attempt, response, adapter.stream(call.options))
    try:
        opening = await relay.opening()
    except BaseException:
        await response.close()
        raise
    if opening is None:
        await response.close()
        return None
    headers = _served_headers(candidate) | {"cache-control": "no-cache"}
    rest = relay.rest(opening)
    await anext(rest)
    return Answer(200, headers, rest)


async def _open(
    call: Call, candidate: Candidate, adapter: Adapter, attempt: Attempt
) -> Response | None:
    try:
        prepared = await adapter.prepare(call.body, call.options, candidate)
    except CannotCarry as exc:
        _uncarried(call, attempt, str(exc))
        return None
    except PrepareFailed as exc:
        attempt.failed(exc.failure)
        return None
    except Exception as exc:  # a value the translation could not read fails this offering alone
        log.warning("the call could not be translated for %s", candidate.offering.place,
                    exc_info=True)  # fmt: skip
        _uncarried(call, attempt, f"a value it could not translate ({type(exc).__name__})")
        return None
    attempt.secrets = prepared.secrets
    try:
        async with asyncio.timeout(settings.MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT):
            return await send(prepared.url, prepared.headers, prepared.body)
    except (UpstreamError, TimeoutError) as exc:
        attempt.failed(Failure(None, _transport_message(exc)))
        return None


def _uncarried(call: Call, attempt: Attempt, reason: str) -> None:
    attempt.failed(Failure(None, f"cannot carry the call: {reason}"), decisive=False)
    call.uncarried = reason


async def _read_all(response: Response) -> bytes:
    async with asyncio.timeout(settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT):
        return await response.read()


async def _read_failure(response: Response) -> bytes:
    try:
        return await _read_all(response)
    except (UpstreamError, TimeoutError):
        return b""
    finally:
        await response.close()


def _refused(call: Call, attempt: Attempt, failure: Failure) -> Answer | None:
    """A provider's non-2xx: the next candidate's turn, or (a request the provider rejects)
    the call's answer at once."""
    failure = attempt.failed(failure)
    status = failure.status or 502
    if failure.openai_shaped and 400 <= status < 500 and status not in RETRYABLE_4XX:
        raise GatewayError(status, **_provider_fields(failure))
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
    error = failure.error or {}
    return {
        "message": failure.message,
        "type": error.get("type") or "invalid_request_error",
        "param": error.get("param"),
        "code": error.get("code"),
    }


class StreamRelay:
    """A streamed answer: held back until it has something to show, then relayed chunk by
    chunk; a failure after that ends it on one error chunk."""

    def __init__(
        self,
        call: Call,
        candidate: Candidate,
        attempt: Attempt,
        response: Response,
        translator: StreamTranslator,
    ) -> None:
        self.call, self.candidate, self.attempt = call, candidate, attempt
        self.response, self.translator = response, translator
        self.chunks = self._chunks()
        self.delivered_chars = 0

    async def opening(self) -> list[dict[str, Any]] | None:
        """The chunks up to the first that shows something; None when the try failed."""
        held: list[dict[str, Any]] = []
        try:
            async for chunk in self.chunks:
                held.append(chunk)
                if _shows(chunk):
                    self._first_token()
                    return held
            self.attempt.failed(Failure(502, "The provider closed the stream without an answer."))
        except StreamFailed as exc:
            self.attempt.failed(exc.failure)
        except (UpstreamError, TimeoutError) as exc:
            self.attempt.failed(Failure(None, _transport_message(exc)))
        except Exception:
            log.warning("the stream of %s could not be read", self.candidate.offering.place,
                        exc_info=True)  # fmt: skip
            self.attempt.failed(Failure(502, "The provider's stream could not be read."))
        return None

    async def rest(self, opening: list[dict[str, Any]]) -> AsyncIterator[bytes]:
        """The stream's bytes. Its first item is empty and taken by `_try_stream`: a generator
        once started is closed by the event loop if it is dropped unfinished (a client gone
        before the server began to send it), so the call still ends recorded. Its last,
        `[DONE]` or one error chunk, is sent once the call is recorded (a client that went
        away is recorded as it leaves)."""
        outcome = "cancelled"
        try:
            yield b""
            for chunk in opening:
                if (data := self._emit(chunk)) is not None:
                    yield data
            async for chunk in self.chunks:
                if (data := self._emit(chunk)) is not None:
                    yield data
            if not self.translator.state.finished:
                raise StreamFailed(Failure(502, "The provider closed the connection mid-answer."))
            outcome, last = "success", DONE
        except StreamFailed as exc:
            outcome, last = "broken", self._error_chunk(exc.failure)
        except (UpstreamError, TimeoutError) as exc:
            outcome, last = "broken", self._error_chunk(Failure(502, _broken_message(exc)))
        except Exception:
            log.warning("a stream of %s broke in Momor", self.candidate.offering.place,
                        exc_info=True)  # fmt: skip
            failure = Failure(502, "Momor could not relay the rest of the answer.")
            outcome, last = "broken", self._error_chunk(failure)
        finally:
            await self.response.close()
            await self._finish(outcome)
        yield last

    async def _chunks(self) -> AsyncIterator[dict[str, Any]]:
        decoder = Decoder()
        stream = self.response.chunks()
        timeout = settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT
        while True:
            try:
                async with asyncio.timeout(timeout):
                    raw = await anext(stream)
            except StopAsyncIteration:
                break
            if self.call.renewal is not None:
                self.call.renewal.tick()
            for event in decoder.feed(raw):
                for chunk in self._translated(event):
                    yield chunk
        for chunk in self.translator.close():
            yield chunk

    def _translated(self, event: Event) -> list[dict[str, Any]]:
        """The chunks of one upstream event; an event that cannot be read breaks the stream."""
        try:
            return self.translator.feed(event)
        except StreamFailed:
            raise
        except Exception:
            log.warning("%s sent a stream event that cannot be read: %.200r",
                        self.candidate.offering.place, event.data)  # fmt: skip
            raise StreamFailed(
                Failure(502, "The provider sent a stream event that cannot be read.")
            ) from None

    def _first_token(self) -> None:
        ms = self.call.elapsed_ms()
        self.call.record.first_token_ms = ms
        self.attempt.row.first_token_ms = self.call.elapsed_ms(self.attempt.started)

    def _emit(self, chunk: dict[str, Any]) -> bytes | None:
        chunk["id"] = self.call.request_id
        chunk["model"] = self.candidate.offering.model_id
        if not chunk.get("created"):
            chunk["created"] = self.call.created
        if not self.call.options.include_usage:
            if "usage" in chunk and not chunk.get("choices"):
                return None
            chunk.pop("usage", None)
        elif chunk.get("usage"):
            _add_cost(chunk["usage"], self.candidate)
        self.delivered_chars += _shown_chars(chunk)
        return encode(chunk)

    def _error_chunk(self, failure: Failure) -> bytes:
        code = failure.status or 502
        if failure.error and isinstance(failure.error.get("code"), int):
            code = failure.error["code"]
        failure = self.attempt.failed(failure)
        return encode(
            {
                "id": self.call.request_id,
                "object": "chat.completion.chunk",
                "created": self.call.created,
                "model": self.candidate.offering.model_id,
                "provider": self.candidate.offering.provider.label,
                "error": {"code": code, "message": failure.message},
                "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
            }
        )

    async def _finish(self, outcome: str) -> None:
        state = self.translator.state
        usage = state.usage
        self.attempt.row.latency_ms = self.call.elapsed_ms(self.attempt.started)
        self.attempt.row.tokens = _tokens(usage) or self._estimate()
        if outcome == "success":
            self.attempt.row.http_status = 200
        record = self.call.record
        _served(self.call, self.candidate, usage, state.finish_reason, state.native_finish_reason)
        record.tokens = self.attempt.row.tokens
        record.status = {"success": "success", "broken": "failed"}.get(outcome, "cancelled")
        if outcome != "success":
            record.finish_reason = "error" if outcome == "broken" else record.finish_reason
            record.error = self.attempt.row.error or "The client went away mid-answer."
        await record_call(record)

    def _estimate(self) -> TokenCounts:
        """No usage from the provider: about four characters a token, of the prompt's JSON and
        of what was delivered."""
        return TokenCounts(
            prompt=max(self.call.body_size // 4, 1),
            completion=(self.delivered_chars + 3) // 4,
            estimated=True,
        )


def scrubbed(failure: Failure, secrets: tuple[str, ...]) -> Failure:
    """The failure with these secrets (and anything shaped like a key) masked in its message
    and in every text field of its error object."""
    error = None
    if failure.error is not None:
        error = {
            name: scrub(value, secrets) if isinstance(value, str) else value
            for name, value in failure.error.items()
        }
    return Failure(failure.status, scrub(failure.message, secrets), error)


def _adapter(candidate: Candidate) -> Adapter:
    adapter = adapter_for(candidate.offering.provider.api)
    if adapter is None:
        raise GatewayError(
            500, f"No adapter speaks {candidate.offering.provider.api}.", type="server_error"
        )
    return adapter


def _shows(chunk: dict[str, Any]) -> bool:
    for choice in chunk.get("choices") or ():
        if choice.get("finish_reason"):
            return True
        delta = choice.get("delta") or {}
        if any(delta.get(name) for name in SHOWN_FIELDS):
            return True
    return False


def _shown_chars(chunk: dict[str, Any]) -> int:
    total = 0
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        for name in ("content", "reasoning"):
            value = delta.get(name)
            if isinstance(value, str):
                total += len(value)
        for call in delta.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments")
            total += len(arguments) if isinstance(arguments, str) else 0
    return total


def _served(
    call: Call, candidate: Candidate, usage: Usage | None, finish: str, native: str
) -> None:
    record = call.record
    record.status = "success"
    record.http_status = 200
    record.model = candidate.offering.model_id
    record.provider = candidate.offering.place
    record.finish_reason = finish
    record.native_finish_reason = native
    record.tokens = _tokens(usage) or TokenCounts()
    record.latency_ms = call.elapsed_ms()


def _add_cost(usage: object, candidate: Candidate) -> None:
    """`usage.cost`: what the organization is charged for the call, in USD."""
    tokens = _tokens(Usage.from_openai(usage))
    if isinstance(usage, dict) and tokens is not None:
        prices = candidate.offering.prices.as_dict()
        usage["cost"] = float(call_cost(tokens, prices, candidate.key_source))


def _served_headers(candidate: Candidate) -> dict[str, str]:
    return {
        "x-momor-provider": candidate.offering.place,
        "x-momor-model": candidate.offering.model_id,
    }


def _tokens(usage: Usage | None) -> TokenCounts | None:
    if usage is None:
        return None
    return TokenCounts(
        prompt=usage.prompt_tokens,
        completion=usage.completion_tokens,
        cached=usage.cached_tokens,
        cache_write=usage.cache_write_tokens,
        reasoning=usage.reasoning_tokens,
    )


def _transport_message(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "The provider did not answer in time."
    if isinstance(exc, UpstreamError) and exc.connect:
        return "The provider could not be reached."
    return "The provider closed the connection."


def _broken_message(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "The provider stopped answering mid-answer."
    return "The provider closed the connection mid-answer."
