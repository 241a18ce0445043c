"""A Messages body checked before it is routed: what Anthropic's API refuses for its shape is
refused here with a 400 `invalid_request_error` (worded as Anthropic words it, `field: what
is wrong`), so no offering is tried for a call none could take.

Checked: `model` (with Momor's `models`, as every route reads them), `max_tokens` (required
but on count_tokens, a whole number of at least 1), `messages` (at least one; each a `user`,
`assistant` or `system` turn (a mid-conversation system message: where one may stand and
which models take it is Anthropic's to say) whose content is a string or a list of blocks,
each with a `type`; the blocks Momor translates hold what they need), `system` (a string or
text blocks), `tools` (each named), `tool_choice` (auto, any, tool with a name, none),
`stop_sequences` (strings), `temperature`, `top_p` (numbers), `top_k` (a whole number),
`thinking` (enabled with a budget of at least 1,024 below `max_tokens`, disabled or
adaptive), `metadata` (an object) and `stream` (a boolean). Fields Momor does not know pass
to Anthropic as written: Anthropic answers for them (its API grows faster than any list here)."""

from __future__ import annotations

from typing import Any, TypeGuard

from gateway.request.errors import GatewayError, invalid_value

ROLES = ("user", "assistant", "system")
TOOL_CHOICES = ("auto", "any", "tool", "none")
THINKING = ("enabled", "disabled", "adaptive")
MIN_BUDGET = 1024
# What each block Momor reads must hold, by its type.
BLOCK_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "image": (("source", dict),),
    "document": (("source", dict),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "tool_result": (("tool_use_id", str),),
    "thinking": (("thinking", str), ("signature", str)),
    "redacted_thinking": (("data", str),),
}


def check_body(body: dict[str, Any], *, counting: bool = False) -> None:
    """Raise GatewayError(400) for the first thing Anthropic would refuse in this body;
    `counting`: a count_tokens body, which has no `max_tokens`."""
    if not counting or "max_tokens" in body:
        _check_max_tokens(body.get("max_tokens"))
    _check_messages(body.get("messages"))
    if "system" in body:
        _check_system(body["system"])
    _check_tools(body)
    _check_sampling(body)
    if "thinking" in body:
        _check_thinking(body["thinking"], body.get("max_tokens"))
    if "metadata" in body and not isinstance(body["metadata"], dict):
        raise refused("metadata: Input should be a valid dictionary")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise refused("stream: Input should be a valid boolean")


def refused(message: str) -> GatewayError:
    return invalid_value(message)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_max_tokens(value: object) -> None:
    if value is None:
        raise refused("max_tokens: Field required")
    if not _whole(value) or value < 1:
        raise refused("max_tokens: Input should be a whole number greater than or equal to 1")


def _check_messages(messages: object) -> None:
    if messages is None:
        raise refused("messages: Field required")
    if not isinstance(messages, list) or not messages:
        raise refused("messages: at least one message is required")
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict):
            raise refused(f"{where}: Input should be a valid dictionary")
        if message.get("role") not in ROLES:
            raise refused(f"{where}.role: Input should be 'user', 'assistant' or 'system'")
        _check_content(message.get("content"), f"{where}.content")


def _check_content(content: object, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise refused(f"{where}: Input should be a valid string or a list of content blocks")
    for index, block in enumerate(content):
        check_block(block, f"{where}.{index}")


def check_block(block: object, where: str) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise refused(f"{where}: Input should be a content block, an object with a 'type'")
    for name, kind in BLOCK_FIELDS.get(block["type"], ()):
        if not isinstance(block.get(name), kind):
            raise refused(f"{where}.{block['type']}.{name}: Field required ({kind.__name__})")
    if block["type"] == "tool_result" and "content" in block:
        inner = block["content"]
        if not isinstance(inner, str):
            _check_content(inner, f"{where}.tool_result.content")


def _check_system(system: object) -> None:
    if isinstance(system, str):
        return
    blocks = system if isinstance(system, list) else None
    if blocks is None or not all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in blocks
    ):
        raise refused("system: Input should be a valid string or a list of text blocks")


def _check_tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise refused("tools: Input should be a valid list")
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise refused(f"tools.{index}.name: Field required")
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in TOOL_CHOICES:
        raise refused("tool_choice: Input should be an object of type auto, any, tool or none")
    if choice["type"] == "tool" and not isinstance(choice.get("name"), str):
        raise refused("tool_choice.tool.name: Field required")


def _check_sampling(body: dict[str, Any]) -> None:
    for name in ("temperature", "top_p"):
        if body.get(name) is not None and not _number(body[name]):
            raise refused(f"{name}: Input should be a valid number")
    if body.get("top_k") is not None and not _whole(body["top_k"]):
        raise refused("top_k: Input should be a valid integer")
    stops = body.get("stop_sequences")
    if stops is not None and (
        not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)
    ):
        raise refused("stop_sequences: Input should be a valid list of strings")


def _check_thinking(thinking: object, ceiling: object) -> None:
    if not isinstance(thinking, dict) or thinking.get("type") not in THINKING:
        raise refused("thinking: Input should be an object of type enabled, disabled or adaptive")
    if thinking["type"] != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not _whole(budget) or budget < MIN_BUDGET:
        raise refused(
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
        )
    if _whole(ceiling) and ceiling <= budget:
        raise refused("`max_tokens` must be greater than `thinking.budget_tokens`.")
