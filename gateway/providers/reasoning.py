"""Reasoning on the way in and out of Chat Completions providers: the effort a model takes,
reasoning sent back moved into the field a provider reads, and reasoning answered under any of
the names providers use returned as `reasoning`."""

from __future__ import annotations

from typing import Any

from gateway.providers.contract import Json

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
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
