"""A streamed answer: held back until it has something to show, then relayed as it comes, and
its record handed to billing when it ends. What one read from the provider brings (one event
or many) is translated and sent to the client in one write.

What a provider streams is never trusted to be well formed: a stream that breaks or holds an
event that cannot be read before it has shown anything fails its try (the call moves to the
next candidate); after that, the stream ends on one error chunk."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from django.conf import settings

from billing.calls.building import Served, estimated_tokens, stream_ended, stream_interrupted
from billing.calls.records import CallRecord, TokenCounts
from billing.recording.hand_off import record_call
from billing.recording.progress import ProgressMarks
from gateway.providers.contract import (
    ChatCompletionChunk,
    Event,
    Failure,
    Json,
    StreamFailed,
    StreamTranslator,
    error_chunk,
)
from gateway.relay.answer_fields import closing_chunk, estimated_usage_chunk
from gateway.relay.attempts import Attempt, Call, tokens_of, transport_message
from gateway.relay.metadata import ended_metadata
from gateway.relay.passthrough import Passthrough
from gateway.relay.sse import DONE, Decoder, encode
from gateway.upstream.interface import Response, UpstreamError

log = logging.getLogger(__name__)

CLOSING = Event("", "momor.closing")  # the end of the provider's stream: the translator closes
SHOWN_FIELDS = ("content", "reasoning", "tool_calls", "refusal", "audio", "reasoning_details")


class StreamRelay:
    """One try's stream, from its upstream response to the client's bytes."""

    def __init__(
        self, call: Call, attempt: Attempt, response: Response, translator: StreamTranslator
    ) -> None:
        self.call, self.attempt = call, attempt
        self.response, self.translator = response, translator
        self.reads = self._reads()
        self.unread: list[bytes | Event] = []  # what the read that ended the opening held after it
        self.delivered_chars = 0
        self.usage_sent = False
        self.passthrough: Passthrough | None = None  # after the opening, where it may
        self.marks = ProgressMarks()

    @property
    def place(self) -> str:
        return self.attempt.candidate.offering.place

    async def opening(self) -> list[ChatCompletionChunk] | None:
        """The chunks up to the first that shows something; None when the try failed."""
        held: list[ChatCompletionChunk] = []
        try:
            async for items in self.reads:
                for index, item in enumerate(items):
                    chunks = self._translated(item)
                    held += chunks
                    if any(map(_shows, chunks)):
                        self._first_token()
                        self.unread = items[index + 1 :]
                        return held
            failure = Failure(502, "The provider closed the stream without an answer.")
        except StreamFailed as exc:
            failure = exc.failure
        except (UpstreamError, TimeoutError) as exc:
            failure = Failure(None, transport_message(exc))
        except Exception:
            log.warning("the stream of %s could not be read", self.place, exc_info=True)
            failure = Failure(502, "The provider's stream could not be read.")
        self.attempt.failed(failure, spent=self._spent(held))
        return None

    def _spent(self, held: list[ChatCompletionChunk]) -> TokenCounts | None:
        """What a stream that failed before it showed anything had generated, billed as its
        try's cost: its usage, else Momor's estimate if it sent any chunk; None if neither."""
        usage = tokens_of(self.translator.state.usage)
        if usage is not None or not held:
            return usage
        return estimated_tokens(self.call.asked.size, _held_chars(held))

    async def rest(self, opening: list[ChatCompletionChunk]) -> AsyncIterator[bytes]:
        """The stream's bytes. Its first item is empty and taken by the failover: a generator
        once started is closed by the event loop if it is dropped unfinished (a client gone
        before the server began to send it), so the call still ends recorded. Its last,
        `[DONE]` or one error chunk, is sent once the call is recorded (a client that went
        away is recorded as it leaves)."""
        outcome = "cancelled"
        last: ChatCompletionChunk | None = None
        try:
            yield b""
            self.passthrough = self._passthrough()
            sent, broke = self._emitted(self.unread)
            shown = b"".join(map(self._emit_chunk, opening)) + sent
            await self.marks.first(self._intent)
            yield shown
            while broke is None:
                items = await anext(self.reads, None)
                if items is None:
                    break
                sent, broke = self._emitted(items)
                self.marks.mark_if_due(self._intent)
                if sent:
                    yield sent
            if broke is not None:
                raise broke
            if not self.translator.state.finished:
                raise StreamFailed(Failure(502, "The provider closed the connection mid-answer."))
            outcome = "success"
        except StreamFailed as exc:
            outcome, last = "broken", self._error_chunk(exc.failure)
        except (UpstreamError, TimeoutError) as exc:
            outcome, last = "broken", self._error_chunk(Failure(502, _broken_message(exc)))
        except Exception:
            log.warning("a stream of %s broke in Momor", self.place, exc_info=True)
            failure = Failure(502, "Momor could not relay the rest of the answer.")
            outcome, last = "broken", self._error_chunk(failure)
        finally:
            await self.response.close()
            await self._finish(outcome)
        for data in self._ending(last):
            yield data

    async def _reads(self) -> AsyncIterator[list[bytes | Event]]:
        """The events of each read from the provider (often several at once), each one the
        bytes of its one `data:` line where it has no other; the translator's closing
        chunks come last, as chunks."""
        decoder = Decoder()
        async for raw in self.response.chunks(settings.MOMOR_UPSTREAM_CHUNK_TIMEOUT):
            if self.call.renewal is not None:
                self.call.renewal.tick()
            if items := decoder.items(raw):
                yield items
        yield [CLOSING]

    def _passthrough(self) -> Passthrough | None:
        """Chunks pass as they came where the provider writes Chat Completions chunks and no
        rule of the call needs to see each one."""
        if not self.translator.openai_chunks or self.call.asked.options.rules is not None:
            return None
        offering = self.attempt.candidate.offering
        return Passthrough(
            self.call.request_id, offering.model_id, offering.provider.label,
            keep_usage=self.call.asked.options.include_usage,
        )  # fmt: skip

    def _translated(self, item: bytes | Event) -> list[ChatCompletionChunk]:
        """The chunks of one upstream event; an event that cannot be read breaks the stream."""
        if item is CLOSING:
            return self.translator.close()
        event = Event(item.decode(errors="replace")) if isinstance(item, bytes) else item
        try:
            return self.translator.feed(event)
        except StreamFailed:
            raise
        except Exception:
            log.warning("%s sent a stream event that cannot be read: %.200r",
                        self.place, event.data)  # fmt: skip
            raise StreamFailed(
                Failure(502, "The provider sent a stream event that cannot be read.")
            ) from None

    def _first_token(self) -> None:
        self.call.record.first_token_ms = self.call.elapsed_ms()
        self.attempt.row.first_token_ms = self.attempt.elapsed_ms()

    def _emitted(self, items: list[bytes | Event]) -> tuple[bytes, Exception | None]:
        """The bytes of a read's events, and what broke the stream after them, if anything:
        the events before a break are the client's all the same."""
        sent: list[bytes] = []
        passthrough = self.passthrough
        try:
            for item in items:
                if passthrough is not None and type(item) is bytes:
                    passed = passthrough.relay(item)
                    if passed is not None:  # as it came
                        sent.append(passed[0])
                        self.delivered_chars += passed[1]
                        continue
                sent.append(b"".join(map(self._emit_chunk, self._translated(item))))
        except Exception as exc:
            return b"".join(sent), exc
        return b"".join(sent), None

    def _emit_chunk(self, chunk: ChatCompletionChunk) -> bytes:
        chunk["id"] = self.call.request_id
        chunk["model"] = self.attempt.candidate.offering.model_id
        chunk["provider"] = self.attempt.candidate.offering.provider.label
        if not chunk.get("created"):
            chunk["created"] = self.call.created
        if not self.call.asked.options.include_usage:
            if "usage" in chunk and not chunk.get("choices"):
                return b""
            chunk.pop("usage", None)
        else:
            usage = chunk.get("usage")
            if usage:
                self.attempt.add_cost(usage)
                self.usage_sent = True
        self.delivered_chars += shown_chars(chunk)
        return encode(chunk)

    def _ending(self, error: ChatCompletionChunk | None) -> list[bytes]:
        """The stream's last events, once its call is recorded: one error chunk; or the usage
        chunk Momor estimates where the client asked for usage and the provider sent none,
        then `momor_metadata` on a chunk of its own where the call asked for it, then
        `[DONE]`."""
        metadata = ended_metadata(self.call, "broken" if error else "served")
        if error is not None:
            return [encode(_with_metadata(error, metadata))]
        chunks: list[ChatCompletionChunk] = []
        if self.call.asked.options.include_usage and not self.usage_sent:
            chunks.append(estimated_usage_chunk(self.attempt, self.delivered_chars))
        if metadata is not None:
            chunks.append(_with_metadata(closing_chunk(self.attempt), metadata))
        return [*map(encode, chunks), DONE]

    def _error_chunk(self, failure: Failure) -> ChatCompletionChunk:
        named = failure.error["code"] if failure.error else None
        code = named if isinstance(named, int) else failure.status or 502
        failure = self.attempt.failed(failure)
        offering = self.attempt.candidate.offering
        return error_chunk(
            self.call.request_id,
            self.call.created,
            offering.model_id,
            offering.provider.label,
            code,
            failure.message,
        )

    def _served(self) -> Served:
        state = self.translator.state
        tokens = tokens_of(state.usage) or estimated_tokens(
            self.call.asked.size, self.delivered_chars
        )
        return self.attempt.outcome_with(tokens, state.finish_reason, state.native_finish_reason)

    def _intent(self) -> CallRecord:
        """The call's record if this process stopped now."""
        return stream_interrupted(
            self.call.record, self.attempt.row, self._served(), self.attempt.elapsed_ms()
        )

    async def _finish(self, outcome: str) -> None:
        served = self._served()
        stream_ended(self.call.record, self.attempt.row, outcome, served, self.attempt.elapsed_ms())
        try:
            await record_call(self.call.record)
        finally:
            await self.marks.ended(self.call.request_id)


def _with_metadata(chunk: ChatCompletionChunk, metadata: Json | None) -> ChatCompletionChunk:
    if metadata is None:
        return chunk
    return {**chunk, "momor_metadata": metadata}


def _shows(chunk: ChatCompletionChunk) -> bool:
    for choice in chunk.get("choices") or ():
        if choice.get("finish_reason"):
            return True
        delta = choice.get("delta") or {}
        if any(delta.get(name) for name in SHOWN_FIELDS):
            return True
    return False


def _held_chars(held: list[ChatCompletionChunk]) -> int:
    try:
        return sum(map(shown_chars, held))
    except Exception:  # a chunk that could not be read (it failed the try): the prompt alone
        return 0


def shown_chars(chunk: ChatCompletionChunk) -> int:
    """The characters of text, reasoning and tool arguments a chunk shows."""
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


def _broken_message(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "The provider stopped answering mid-answer."
    return "The provider closed the connection mid-answer."
