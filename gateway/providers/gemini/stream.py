"""Gemini's `streamGenerateContent?alt=sse` as Chat Completions chunks. Each event is a whole
GenerateContentResponse holding the parts produced since the last one; a run of thought parts
streams as `delta.reasoning` and closes with one `delta.reasoning_details` entry; a signature
on a text part follows that text as a `reasoning.encrypted` entry of `delta.reasoning_details`.

Reference: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from gateway.providers.contract import (
    ChatCompletionChunk,
    ChunkChoice,
    Event,
    Json,
    StreamFailed,
    StreamTranslator,
    envelope,
)
from gateway.providers.gemini.response import (
    finish_reason,
    google_failure,
    logprobs_of,
    reasoning_detail,
    text_signature,
    tool_call,
    usage_of,
)

Chunks = list[ChatCompletionChunk]


@dataclass(slots=True)
class ChoiceStream:
    """What one candidate has streamed so far."""

    index: int
    opened: bool = False
    thoughts: list[Json] = field(default_factory=list)
    calls: int = 0
    finished: bool = False


class GeminiStream(StreamTranslator):
    def __init__(self) -> None:
        super().__init__()
        self.choices: dict[int, ChoiceStream] = {}

    def feed(self, event: Event) -> Chunks:
        body = orjson.loads(event.data) if event.data else None
        if not isinstance(body, dict):
            return []
        if isinstance(body.get("error"), dict):
            raise StreamFailed(google_failure(body["error"]))
        usage = usage_of(body.get("usageMetadata"))
        if usage is not None:
            self.state.usage = usage
        candidates = body.get("candidates") or []
        if not candidates and (body.get("promptFeedback") or {}).get("blockReason"):
            return self._blocked()
        chunks: Chunks = []
        for position, candidate in enumerate(candidates):
            if isinstance(candidate, dict):
                chunks.extend(self._candidate(candidate, position))
        return chunks

    def close(self) -> Chunks:
        """The usage chunk, once every candidate has finished; the relay sends [DONE]."""
        if not self.choices or not all(c.finished for c in self.choices.values()):
            return []
        self.state.finished = True
        usage = self.state.usage.as_openai() if self.state.usage else None
        return [{**envelope([]), "usage": usage}] if usage else []

    def _candidate(self, candidate: Json, position: int) -> Chunks:
        index = int(candidate.get("index") or position)
        choice = self.choices.setdefault(index, ChoiceStream(index))
        chunks = self._open(choice)
        for part in (candidate.get("content") or {}).get("parts") or []:
            if isinstance(part, dict):
                chunks.extend(self._part(choice, part))
        logprobs = logprobs_of(candidate.get("logprobsResult"))
        if logprobs:
            chunks.append(chunk(index, {}, logprobs=logprobs))
        native = candidate.get("finishReason")
        if native:
            chunks.extend(self._finish(choice, str(native)))
        return chunks

    def _open(self, choice: ChoiceStream) -> Chunks:
        if choice.opened:
            return []
        choice.opened = True
        return [chunk(choice.index, {"role": "assistant", "content": ""})]

    def _part(self, choice: ChoiceStream, part: Json) -> Chunks:
        if part.get("thought"):
            choice.thoughts.append(part)
            text = str(part.get("text") or "")
            return [chunk(choice.index, {"reasoning": text})] if text else []
        chunks = self._close_thoughts(choice)
        if isinstance(part.get("functionCall"), dict):
            call = tool_call(part, choice.calls)
            chunks.append(chunk(choice.index, {"tool_calls": [{"index": choice.calls, **call}]}))
            choice.calls += 1
        else:
            if part.get("text"):
                chunks.append(chunk(choice.index, {"content": part["text"]}))
            signed = text_signature(part)
            if signed:
                chunks.append(chunk(choice.index, {"reasoning_details": signed}))
        return chunks

    def _close_thoughts(self, choice: ChoiceStream) -> Chunks:
        if not choice.thoughts:
            return []
        detail = reasoning_detail(choice.thoughts)
        choice.thoughts = []
        return [chunk(choice.index, {"reasoning_details": [detail]})]

    def _finish(self, choice: ChoiceStream, native: str) -> Chunks:
        chunks = self._close_thoughts(choice)
        reason = finish_reason(native, choice.calls > 0)
        choice.finished = True
        if not self.state.finish_reason:
            self.state.finish_reason, self.state.native_finish_reason = reason, native
        chunks.append(chunk(choice.index, {}, finish_reason=reason))
        return chunks

    def _blocked(self) -> Chunks:
        """A prompt Gemini blocked: no candidates, only promptFeedback.blockReason."""
        choice = self.choices.setdefault(0, ChoiceStream(0))
        chunks = self._open(choice)
        choice.finished = True
        self.state.finish_reason, self.state.native_finish_reason = (
            "content_filter",
            "PROMPT_BLOCKED",
        )
        chunks.append(chunk(0, {}, finish_reason="content_filter"))
        return chunks


def chunk(
    index: int, delta: Json, *, finish_reason: str | None = None, logprobs: Json | None = None
) -> ChatCompletionChunk:
    choice: ChunkChoice = {
        "index": index,
        "delta": delta,
        "logprobs": logprobs,
        "finish_reason": finish_reason,
    }
    return envelope([choice])
