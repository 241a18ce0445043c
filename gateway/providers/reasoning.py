"""Reasoning on the way in and out of Chat Completions providers: what the call asks of it
(`reasoning_asked`), the effort a model takes, reasoning sent back moved into the field a
provider reads, and reasoning answered under any of the names providers use returned as
`reasoning`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.providers.contract import CannotCarry, Json, ReasoningAsk

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
DEFAULT_EFFORT = "medium"
# The budget an effort stands for where an API takes only an effort and the call gives a
# budget: the deepest effort whose budget the call's reaches (the budgets Anthropic's thinking
# is sent for an effort when the call sets no ceiling).
EFFORT_BUDGETS = (("xhigh", 32768), ("high", 16384), ("medium", 4096), ("low", 1024))
ALIASES = ("reasoning", "reasoning_effort", "include_reasoning")


class BadReasoning(CannotCarry):
    """A reasoning field the call sent that cannot be read; `field` names it. Momor refuses
    such a call before routing it; an adapter given one cannot carry it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def reasoning_asked(body: Mapping[str, Any]) -> ReasoningAsk | None:
    """What the call asks of reasoning, None for nothing; raises BadReasoning.

    `reasoning_effort` stands for `reasoning.effort` and `include_reasoning` for the inverse
    of `reasoning.exclude` (the object's own fields win); `enabled: false` turns reasoning off
    (effort "none"), `enabled: true` alone asks for the default effort."""
    if not any(name in body for name in ALIASES):
        return None
    raw = body.get("reasoning")
    if raw is None:
        raw = {}
    elif not isinstance(raw, dict):
        raise BadReasoning(
            "reasoning", "'reasoning' must be an object of effort, max_tokens, exclude, enabled"
        )
    effort = _effort(raw.get("effort"), "reasoning.effort")
    if effort is None:
        effort = _effort(body.get("reasoning_effort"), "reasoning_effort")
    budget = _budget(raw.get("max_tokens"))
    enabled = _flag(raw.get("enabled"), "reasoning.enabled")
    exclude = _flag(raw.get("exclude"), "reasoning.exclude")
    if exclude is None:
        included = _flag(body.get("include_reasoning"), "include_reasoning")
        exclude = included is False
    if enabled is False:
        effort, budget = "none", None
    elif enabled and effort is None and budget is None:
        effort = DEFAULT_EFFORT
    if effort is None and budget is None and not exclude:
        return None
    return ReasoningAsk(effort, budget, exclude)


def _effort(value: object, field: str) -> str | None:
    if value is None or (isinstance(value, str) and value in EFFORTS):
        return value
    raise BadReasoning(field, f"'{field}' must be one of {', '.join(EFFORTS)}")


def _budget(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise BadReasoning(
        "reasoning.max_tokens", "'reasoning.max_tokens' must be a positive integer of tokens"
    )


def _flag(value: object, field: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise BadReasoning(field, f"'{field}' must be a boolean")


def effort_of(ask: ReasoningAsk) -> str | None:
    """The effort an API that takes only an effort is asked for: the one asked, else the one
    the budget stands for."""
    if ask.effort is not None or ask.max_tokens is None:
        return ask.effort
    for effort, budget in EFFORT_BUDGETS:
        if ask.max_tokens >= budget:
            return effort
    return "minimal"


ANSWER_FIELDS = ("reasoning_content", "reasoning_text", "thinking")
SENT_FIELDS = ("reasoning", "reasoning_content", "reasoning_details")


def effort_for(asked: object, takes: tuple[str, ...]) -> str | None:
    """The effort sent: the one asked where the model takes it, else the nearest deeper one it
    takes, else its deepest; None for a model that takes no effort at all."""
    if not takes:
        return None
    if not isinstance(asked, str) or asked not in EFFORTS:
        return asked if isinstance(asked, str) else None
    if asked in takes:
        return asked
    depth = EFFORTS.index(asked)
    known = sorted((EFFORTS.index(e), e) for e in takes if e in EFFORTS)
    deeper = [e for d, e in known if d > depth]
    if deeper:
        return deeper[0]
    return known[-1][1] if known else None


def answered_reasoning(message: Json) -> None:
    """Rename a provider's reasoning field (`reasoning_content` and the like) to `reasoning`."""
    for name in ANSWER_FIELDS:
        if name in message:
            value = message.pop(name)
            if value is not None and "reasoning" not in message:
                message["reasoning"] = value
    _mistral_thinking(message)


def _mistral_thinking(message: Json) -> None:
    """Mistral's reasoning models answer content as a list of thinking and text chunks."""
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(p, dict) and p.get("type") == "thinking" for p in content
    ):
        return
    thoughts: list[str] = []
    texts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "thinking":
            thoughts.extend(
                t.get("text", "") for t in part.get("thinking") or () if isinstance(t, dict)
            )
        elif part.get("type") == "text":
            texts.append(str(part.get("text", "")))
    message["content"] = "".join(texts)
    message["reasoning"] = message.get("reasoning", "") + "".join(thoughts)


def move_reasoning_back(messages: list[Any], field: str | None) -> list[Any]:
    """Assistant turns sent back with reasoning get it under `field` (dropped when None); the
    list is copied only when a message changes."""
    if not any(_has_reasoning(m) for m in messages):
        return messages
    return [_moved(m, field) if _has_reasoning(m) else m for m in messages]


def _has_reasoning(message: object) -> bool:
    return isinstance(message, dict) and any(name in message for name in SENT_FIELDS)


def _moved(message: Json, field: str | None) -> Json:
    out = {k: v for k, v in message.items() if k not in SENT_FIELDS}
    text = message.get("reasoning") or message.get("reasoning_content") or _details_text(message)
    if field and text:
        out[field] = text
    return out


def _details_text(message: Json) -> str:
    details = message.get("reasoning_details")
    if not isinstance(details, list):
        return ""
    return "".join(str(d.get("text") or "") for d in details if isinstance(d, dict))
