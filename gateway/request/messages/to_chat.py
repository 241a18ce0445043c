"""A Messages body (checked by `checks`) as the Chat Completions request Momor's other adapters
are given: pure, and best effort. What Chat Completions cannot carry is left out of the
request and named in `Translated.uncarried`, so that only Anthropic's offerings are tried for
such a call (each other one fails its try as "cannot carry the call").

Each Messages field as Chat Completions carries it (the full table is docs/api.md's):

- `system` (a string, or text blocks joined by a newline): a first `system` message;
- a user turn: its `tool_result` blocks as `tool` messages (text blocks joined, a
  `tool_reference` as the name of the tool it loads; `is_error` is not carried), then its
  other blocks as one `user` message: text (one text block as a string), `image` (base64 as
  a data URL, or url) as `image_url`, `document` (a base64 PDF as a `file` with
  `file_data`; plain text or content blocks as text);
- an assistant turn: text as `content`, `tool_use` as `tool_calls` (input as JSON
  arguments), `thinking` and `redacted_thinking` as `reasoning_details` entries holding their
  signature or data (as Anthropic's adapter reads and replays them);
- a mid-conversation system turn: a `system` message in its place (text blocks joined by a
  newline), left off once a user message follows one shown until then (`clear_at:
  next_user_message`);
- `context_management`: a `clear_thinking_20251015` edit clears the `reasoning_details` of
  all but the last `keep` assistant turns (`thinking_turns`; none cleared for `all` or no
  `keep`);
- `max_tokens`, `temperature`, `top_p` as they are; `stop_sequences` as `stop`;
- `tools` (custom ones) as functions (`input_schema` as `parameters`), a deferred one
  (`defer_loading`) once a tool result's `tool_reference` has loaded it; `tool_choice`
  auto, any, tool, none as auto, required, the function, none; `disable_parallel_tool_use`
  as `parallel_tool_calls: false`;
- `thinking` enabled as `reasoning.max_tokens` (its budget), disabled as `reasoning.enabled:
  false`; `output_config.effort` as `reasoning.effort` (max as xhigh); `output_config.format`
  (json_schema) as `response_format`;
- `metadata.user_id` as `user`; `service_tier` auto and standard_only as auto and default;
- `stream` as `stream` with `stream_options.include_usage` (the usage the last events carry).

Left off: `top_k` (Chat Completions has none, and OpenAI refuses it), `cache_control` (no
other API in Momor reads it). Not carried (`uncarried`): Anthropic's server tools (web
search, code execution, ...), images and documents by file id, documents by URL, images in
tool results, blocks of other types (server tool results, search results, a system turn's
tool additions and removals, ...), a system turn's `output_config`, `container`,
`mcp_servers` and every other context management edit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.providers.anthropic.request import REDACTED_KEY, SIGNATURE_KEY
from gateway.providers.contract import Json

EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "xhigh"}
TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
SERVICE_TIERS = {"auto": "auto", "standard_only": "default"}
UNCARRIED_FIELDS = ("container", "mcp_servers")
CLEAR_THINKING = "clear_thinking_20251015"
REFERENCE = "tool_reference"
PDF = "application/pdf"


@dataclass(slots=True)
class Translated:
    request: Json
    """The Chat Completions request (without Momor's routing fields)."""
    uncarried: str = ""
    """What of the body Chat Completions cannot carry; empty when it carries it all."""


@dataclass(slots=True)
class _Notes:
    uncarried: list[str] = field(default_factory=list)

    def cannot_carry(self, what: str) -> None:
        if what not in self.uncarried:
            self.uncarried.append(what)


def chat_request(body: Json) -> Translated:
    """The Chat Completions request a Messages body makes."""
    notes = _Notes()
    out: Json = {"messages": [*_system(body.get("system")), *_turns(body["messages"], notes)]}
    _context_edits(body, out["messages"], notes)
    _ceiling_and_sampling(body, out)
    _tools(body, out, notes)
    _reasoning_and_format(body, out)
    if body.get("stream") is True:
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    for name in UNCARRIED_FIELDS:
        if body.get(name) is not None:
            notes.cannot_carry(f"'{name}'")
    return Translated(out, ", ".join(notes.uncarried))


def _system(system: object) -> list[Json]:
    if isinstance(system, list):
        system = "\n".join(str(block.get("text") or "") for block in system)
    return [{"role": "system", "content": system}] if isinstance(system, str) and system else []


def _turns(messages: list[Json], notes: _Notes) -> list[Json]:
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    out: list[Json] = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            out.append(assistant_message(message["content"], notes))
        elif message["role"] == "system":
            out.extend(system_message(message, notes, user_follows=index < last_user))
        else:
            out.extend(user_messages(message["content"], notes))
    return out


def system_message(message: Json, notes: _Notes, *, user_follows: bool) -> list[Json]:
    """A mid-conversation system turn, as a `system` message where it stands."""
    if user_follows and message.get("clear_at") == "next_user_message":
        return []
    if message.get("output_config"):
        notes.cannot_carry("a system message's output_config")
    content = message["content"]
    if isinstance(content, str):
        return [{"role": "system", "content": content}]
    for block in content:
        if block["type"] != "text":
            notes.cannot_carry(f"a {block['type']} block")
    texts = [block["text"] for block in content if block["type"] == "text"]
    return [{"role": "system", "content": "\n".join(texts)}]


def _context_edits(body: Json, messages: list[Json], notes: _Notes) -> None:
    config = body.get("context_management")
    if config is None:
        return
    edits = config.get("edits", []) if isinstance(config, dict) else None
    if not isinstance(edits, list):
        notes.cannot_carry("'context_management'")
        return
    for edit in edits:
        kind = edit.get("type") if isinstance(edit, dict) else None
        if kind != CLEAR_THINKING or not _clear_thinking(messages, edit.get("keep", "all")):
            notes.cannot_carry(f"context_management's {kind} edit")


def _clear_thinking(messages: list[Json], keep: object) -> bool:
    """Clear the reasoning of all but the last `keep` assistant turns; False for a `keep`
    Momor does not read."""
    if keep == "all" or keep == {"type": "all"}:
        return True
    if not isinstance(keep, dict) or keep.get("type") != "thinking_turns":
        return False
    count = keep.get("value")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return False
    turns = [message for message in messages if message["role"] == "assistant"]
    for turn in turns[: max(len(turns) - count, 0)]:
        turn.pop("reasoning_details", None)
    return True


# User turns


def user_messages(content: str | list[Json], notes: _Notes) -> list[Json]:
    """A user turn: its tool results as `tool` messages, then its other blocks as one user
    message (none when it held tool results alone)."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    results = [tool_message(b, notes) for b in content if b["type"] == "tool_result"]
    parts = [p for b in content if b["type"] != "tool_result" for p in user_parts(b, notes)]
    if not parts and results:
        return results
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [*results, {"role": "user", "content": parts[0]["text"]}]
    return [*results, {"role": "user", "content": parts}]


def user_parts(block: Json, notes: _Notes) -> list[Json]:
    kind = block["type"]
    if kind == "text":
        return [{"type": "text", "text": block["text"]}]
    if kind == "image":
        return image_part(block["source"], notes)
    if kind == "document":
        return document_parts(block, notes)
    if kind not in ("thinking", "redacted_thinking"):  # never a user's: left off
        notes.cannot_carry(f"a {kind} block")
    return []


def image_part(source: Json, notes: _Notes) -> list[Json]:
    kind = source.get("type")
    if kind == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif kind == "url":
        url = str(source.get("url"))
    else:
        notes.cannot_carry(f"an image by {kind}")
        return []
    return [{"type": "image_url", "image_url": {"url": url}}]


def document_parts(block: Json, notes: _Notes) -> list[Json]:
    source = block["source"]
    kind = source.get("type")
    if kind == "base64" and source.get("media_type") == PDF:
        data = f"data:{PDF};base64,{source.get('data')}"
        name = block.get("title") if isinstance(block.get("title"), str) else "document.pdf"
        return [{"type": "file", "file": {"filename": name, "file_data": data}}]
    if kind == "text":
        return [{"type": "text", "text": str(source.get("data") or "")}]
    if kind == "content" and isinstance(source.get("content"), list | str):
        return [{"type": "text", "text": _text_of(source["content"], notes)}]
    notes.cannot_carry(f"a document by {kind}")
    return []


def tool_message(block: Json, notes: _Notes) -> Json:
    content = block.get("content")
    text = content if isinstance(content, str) else _text_of(content or [], notes)
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text}


def _text_of(content: str | list[Any], notes: _Notes) -> str:
    """Text blocks' text and the names of the tools `tool_reference` blocks load, joined; any
    other block cannot be carried where only text goes."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif isinstance(block, dict) and block.get("type") == REFERENCE:
            texts.append(str(block.get("tool_name") or ""))
        else:
            kind = block.get("type") if isinstance(block, dict) else "non-block"
            notes.cannot_carry(f"a {kind} block in a tool result or document")
    return "\n".join(texts)


# Assistant turns


def assistant_message(content: str | list[Json], notes: _Notes) -> Json:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[Json] = []
    details: list[Json] = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(tool_call(block))
        elif kind == "thinking":
            data = {SIGNATURE_KEY: block["signature"]}
            details.append({"type": "reasoning.text", "text": block["thinking"], "data": data})
        elif kind == "redacted_thinking":
            details.append({"type": "reasoning.encrypted", "data": {REDACTED_KEY: block["data"]}})
        else:
            notes.cannot_carry(f"a {kind} block")
    message: Json = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    if details:
        message["reasoning_details"] = details
    return message


def tool_call(block: Json) -> Json:
    return {
        "id": block["id"],
        "type": "function",
        "function": {"name": block["name"], "arguments": orjson.dumps(block["input"]).decode()},
    }


# The other fields


def _ceiling_and_sampling(body: Json, out: Json) -> None:
    for name in ("max_tokens", "temperature", "top_p"):
        if body.get(name) is not None:
            out[name] = body[name]
    if body.get("stop_sequences"):
        out["stop"] = body["stop_sequences"]
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        out["user"] = metadata["user_id"]
    tier = SERVICE_TIERS.get(str(body.get("service_tier")))
    if tier is not None:
        out["service_tier"] = tier


def _tools(body: Json, out: Json, notes: _Notes) -> None:
    functions = []
    loaded = _loaded(body["messages"])
    for tool in body.get("tools") or ():
        if tool.get("defer_loading") is True and tool["name"] not in loaded:
            continue
        if tool.get("type") in (None, "custom"):
            functions.append(function_tool(tool))
        else:
            notes.cannot_carry(f"Anthropic's {tool['type']} tool")
    if not functions:
        return
    out["tools"] = functions
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return
    if choice["type"] == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    else:
        out["tool_choice"] = TOOL_CHOICES[choice["type"]]
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False


def _loaded(messages: list[Json]) -> set[str]:
    """The deferred tools the conversation has loaded: those its tool results reference."""
    return {
        str(inner.get("tool_name"))
        for message in messages
        for block in _blocks(message)
        if block["type"] == "tool_result"
        for inner in _blocks(block)
        if isinstance(inner, dict) and inner.get("type") == REFERENCE
    }


def _blocks(holder: Json) -> list[Any]:
    content = holder.get("content")
    return content if isinstance(content, list) else []


def function_tool(tool: Json) -> Json:
    schema = tool.get("input_schema")
    function: Json = {
        "name": tool["name"],
        "parameters": schema if isinstance(schema, dict) else {"type": "object"},
    }
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _reasoning_and_format(body: Json, out: Json) -> None:
    thinking = body.get("thinking")
    thinking = thinking if isinstance(thinking, dict) else {}
    kind = thinking.get("type")
    config = body.get("output_config")
    config = config if isinstance(config, dict) else {}
    reasoning: Json = {}
    if kind == "enabled":
        reasoning["max_tokens"] = thinking["budget_tokens"]
    elif kind == "disabled":
        reasoning["enabled"] = False
    effort = EFFORTS.get(str(config.get("effort")))
    if effort is not None and kind != "disabled":
        reasoning["effort"] = effort
    if reasoning:
        out["reasoning"] = reasoning
    shape = config.get("format")
    if isinstance(shape, dict) and shape.get("type") == "json_schema":
        schema = shape.get("schema") if isinstance(shape.get("schema"), dict) else {}
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema},
        }
