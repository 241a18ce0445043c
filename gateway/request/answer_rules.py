"""What Momor holds a call's answer to beside translating it: the call's tool rules
(`gateway.request.tool_rules`) and `reasoning.exclude` (or `include_reasoning: false`). They are
read once with the call's other fields; a call that sets neither has none, and its answer is
relayed untouched, with nothing added per chunk.

An answer that breaks a tool rule fails its try as a provider's failure does: a plain answer
(`RuleBroken`), or a stream before it has shown anything, moves the call to the next
candidate; a stream that has shown something ends on one error chunk. Under a rule on the
number of calls (max_tool_calls, parallel_tool_calls: false) a stream's tool calls are held
back until its answer finishes, since any later call may break the rule: a stream of calls
alone then still moves to the next candidate. Excluded reasoning is
taken out of the answer and the stream (`reasoning`, `reasoning_details`); its tokens stay in
the usage, and are billed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.providers.contract import (
    ChatCompletion,
    ChatCompletionChunk,
    Event,
    Failure,
    Json,
    StreamFailed,
    StreamTranslator,
)
from gateway.providers.reasoning import BadReasoning, reasoning_asked
from gateway.request.errors import invalid_value
from gateway.request.tool_rules import StreamedCalls, ToolRules, tool_rules

EXCLUDED = ("reasoning", "reasoning_details")


class RuleBroken(Exception):
    """A plain answer broke the call's tool rules."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class AnswerRules:
    tools: ToolRules | None = None
    exclude_reasoning: bool = False

    def hold(self, body: ChatCompletion) -> None:
        """Hold a plain answer to the rules: raises RuleBroken, else takes out the reasoning
        the call excludes."""
        if self.tools is not None:
            reason = self.tools.broken_reply(body)
            if reason is not None:
                raise RuleBroken(broken(reason))
        if self.exclude_reasoning:
            for choice in body.get("choices") or ():
                message = choice.get("message") if isinstance(choice, dict) else None
                if isinstance(message, dict):
                    _drop_reasoning(message)

    def stream(self, translator: StreamTranslator) -> StreamTranslator:
        return HeldStream(translator, self)


def read_answer_rules(body: Mapping[str, Any]) -> AnswerRules | None:
    """The rules a call's answer is held to, None for none; raises GatewayError(400) for a
    tool or reasoning field that cannot be read (`reasoning` and its aliases are checked here,
    once, for every adapter)."""
    tools = tool_rules(body)
    try:
        ask = reasoning_asked(body)
    except BadReasoning as exc:
        raise invalid_value(str(exc)) from None
    exclude = ask is not None and ask.exclude
    if tools is None and not exclude:
        return None
    return AnswerRules(tools, exclude)


def broken(reason: str) -> Failure:
    return Failure(502, f"The answer broke the call's tool rules: {reason}.")


class HeldStream(StreamTranslator):
    """A stream's translator with the rules applied to each chunk it makes."""

    def __init__(self, inner: StreamTranslator, rules: AnswerRules) -> None:
        self.inner = inner
        self.state = inner.state
        tools = rules.tools
        self.calls = StreamedCalls(tools) if tools is not None else None
        self.exclude = rules.exclude_reasoning
        counts = tools is not None and (tools.most is not None or tools.single)
        self.holding: list[ChatCompletionChunk] | None = [] if counts else None

    def feed(self, event: Event) -> list[ChatCompletionChunk]:
        return self._held(self.inner.feed(event))

    def close(self) -> list[ChatCompletionChunk]:
        kept = self._held(self.inner.close())
        if self.holding:
            kept.extend(self.holding)
            self.holding.clear()
        return kept

    def _held(self, chunks: list[ChatCompletionChunk]) -> list[ChatCompletionChunk]:
        kept: list[ChatCompletionChunk] = []
        for chunk in chunks:
            if self.calls is not None:
                reason = self.calls.broken(chunk)
                if reason is not None:
                    raise StreamFailed(broken(reason))
            if self.exclude and not _kept_without_reasoning(chunk):
                continue
            holding = self.holding
            if holding is None or not (holding or _calls(chunk)):
                kept.append(chunk)
            elif _finishes(chunk):
                kept.extend(holding)
                kept.append(chunk)
                holding.clear()
            else:
                holding.append(chunk)
        return kept


def _calls(chunk: ChatCompletionChunk) -> bool:
    return any((c.get("delta") or {}).get("tool_calls") for c in chunk.get("choices") or ())


def _finishes(chunk: ChatCompletionChunk) -> bool:
    return any(c.get("finish_reason") for c in chunk.get("choices") or ())


def _kept_without_reasoning(chunk: ChatCompletionChunk) -> bool:
    """Take the reasoning out of a chunk; False when that leaves it nothing to send."""
    dropped = False
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if isinstance(delta, dict):
            dropped = _drop_reasoning(delta) or dropped
    if not dropped or chunk.get("usage") or "error" in chunk:
        return True
    return any(c.get("delta") or c.get("finish_reason") for c in chunk.get("choices") or ())


def _drop_reasoning(message: Json) -> bool:
    dropped = False
    for name in EXCLUDED:
        if name in message:
            del message[name]
            dropped = True
    return dropped
