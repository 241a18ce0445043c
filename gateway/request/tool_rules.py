"""The tool rules a call sets, which Momor holds its answer to: `max_tool_calls` (read by Momor
alone), and, where the call asks offerings to honour every parameter it sends
(`provider.require_parameters: true`), `parallel_tool_calls: false` and a `tool_choice` of
"none", "required" or one naming a function. An answer that breaks one fails its offering, as
a provider's failure does.

`tool_choice` and `parallel_tool_calls` always go to the provider as written, and without
`require_parameters` the answer to them is the provider's, as Momor's reference says of every
field it does not read; a value of another shape is the provider's to answer either way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.providers.contract import ChatCompletion, ChatCompletionChunk
from gateway.request.errors import excerpt, invalid_value

MAX_TOOL_CALLS = 1024
FIELDS = ("max_tool_calls", "tool_choice", "parallel_tool_calls")


@dataclass(frozen=True, slots=True)
class ToolRules:
    most: int | None = None
    """max_tool_calls: the most tool calls one answer may make."""
    single: bool = False
    """parallel_tool_calls: false: at most one call."""
    none: bool = False
    """tool_choice "none": no call at all."""
    required: bool = False
    """tool_choice "required", or naming a function: at least one call."""
    named: str | None = None
    """tool_choice naming a function: every call is to it."""

    def broken(self, names: list[str | None], *, finished: bool) -> str | None:
        """Why an answer that made calls to these functions (so far, or `finished`) breaks
        the rules; None when it keeps them."""
        if names and self.none:
            return "it called a tool, and tool_choice is none"
        if self.named is not None:
            wrong = next((n for n in names if n is not None and n != self.named), None)
            if wrong is not None:
                return f"it called {excerpt(wrong)}, and tool_choice names {excerpt(self.named)}"
        if self.most is not None and len(names) > self.most:
            return f"it made more tool calls than max_tool_calls allows ({self.most})"
        if self.single and len(names) > 1:
            return "it made more than one tool call, and parallel_tool_calls is false"
        if finished and self.required and not names:
            return "it called no tool, and tool_choice requires one"
        return None

    def broken_reply(self, body: ChatCompletion) -> str | None:
        """Why a plain answer breaks the rules (its first choice that does), or None."""
        for choice in body.get("choices") or ():
            message = choice.get("message") if isinstance(choice, dict) else None
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            names = [_name(c) for c in calls] if isinstance(calls, list) else []
            reason = self.broken(names, finished=True)
            if reason is not None:
                return reason
        return None


@dataclass(slots=True)
class StreamedCalls:
    """The calls a stream has made so far, per choice, as their deltas arrive: a call is one
    `index` of `delta.tool_calls` (or one `id` where a provider sends no index)."""

    rules: ToolRules
    calls: dict[int, dict[object, str | None]] = field(default_factory=dict)

    def broken(self, chunk: ChatCompletionChunk) -> str | None:
        for choice in chunk.get("choices") or ():
            index = choice.get("index") or 0
            made = self.calls.setdefault(index, {})
            deltas = (choice.get("delta") or {}).get("tool_calls")
            if isinstance(deltas, list):
                _note(made, deltas)
            finished = bool(choice.get("finish_reason"))
            reason = self.rules.broken(list(made.values()), finished=finished)
            if reason is not None:
                return reason
        return None


def _note(made: dict[object, str | None], deltas: Iterable[object]) -> None:
    for delta in deltas:
        if not isinstance(delta, dict):
            continue
        key = delta.get("index")
        key = key if isinstance(key, int) else delta.get("id")
        if key is None:
            continue
        name = _name(delta)
        if made.get(key) is None:
            made[key] = name


def _name(call: object) -> str | None:
    """The function a call (or a call's first delta) names; custom tools name theirs too."""
    if not isinstance(call, dict):
        return None
    for kind in ("function", "custom"):
        inner = call.get(kind)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return str(inner["name"])
    return None


def tool_rules(body: Mapping[str, Any]) -> ToolRules | None:
    """The rules the call sets, None for none; raises GatewayError(400) for a max_tool_calls
    that is not an integer from 1 to 1,024."""
    if not any(name in body for name in FIELDS):
        return None
    most = _most(body.get("max_tool_calls"))
    if not _honour_every_parameter(body):
        return None if most is None else ToolRules(most=most)
    choice = body.get("tool_choice")
    named = _named(choice)
    rules = ToolRules(
        most=most,
        single=body.get("parallel_tool_calls") is False,
        none=choice == "none",
        required=choice == "required" or named is not None,
        named=named,
    )
    return None if rules == NO_RULES else rules


NO_RULES = ToolRules()


def _honour_every_parameter(body: Mapping[str, Any]) -> bool:
    """`provider.require_parameters: true` (a value of another shape is refused where the
    provider object is read)."""
    provider = body.get("provider")
    return isinstance(provider, dict) and provider.get("require_parameters") is True


def _most(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_TOOL_CALLS:
        return value
    raise invalid_value(f"'max_tool_calls' must be an integer from 1 to {MAX_TOOL_CALLS:,}")


def _named(choice: object) -> str | None:
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None
