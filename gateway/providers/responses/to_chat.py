"""A Responses call as the Chat Completions request every offering but OpenAI's own is sent (its
adapter then speaks the provider's API), and what of the call only OpenAI's own API can carry.
docs/api.md ("Responses") holds the table both ways.

- `instructions`: a first `system` message; `input` as a string: one `user` message.
- A `message` item: a message of its role (`developer` as `system`); `input_text` and
  `output_text` parts as text, `input_image` (a URL or data URL) as `image_url`, `input_file`
  (`file_data`) as a `file` part, `input_audio` as `input_audio`.
- `function_call` items: the `tool_calls` of the assistant message they follow (`call_id` as
  the call's `id`; a call to a namespace's function named as `wire.namespaced` names it);
  `function_call_output`: a `tool` message (`call_id` as `tool_call_id`).
- `reasoning` items: Momor's `encrypted_content` (`wire.momor_reasoning`) replayed as the next
  assistant message's `reasoning_details`; OpenAI's left out (only OpenAI can read it), its
  summary kept as that message's `reasoning`.
- `tools` of type `function`: Chat Completions' function tools; of type `namespace`, each
  of its functions a function tool named `<namespace>__<name>`; `tool_choice` as Chat
  Completions writes it; `text.format` (`json_schema`, `json_object`): `response_format`;
  `reasoning.effort`: `reasoning_effort`; `max_output_tokens`: `max_completion_tokens`;
  `temperature`, `top_p`, `parallel_tool_calls`, `user`, `stream` as they are.
- Left out, being OpenAI's alone: `include`, `store`, `metadata`, `service_tier`, `truncation`,
  `safety_identifier`, `prompt_cache_key`, `top_logprobs`, `max_tool_calls` (built-in
  tools'), `stream_options`, `text.verbosity`, `reasoning.summary` (it shapes the answer).

What only OpenAI's own API can carry makes `openai_only` say so: hosted tools (web search,
file search, code interpreter, computer use, MCP, image generation...) and the tool choices
naming them, items of their calls, images and files given by `file_id` or `file_url`, and
`prompt` templates. `Unreadable` is an input Momor cannot read at all (the caller refuses the
call with a 400)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.providers.contract import Json
from gateway.providers.responses.wire import namespaced, read_momor_reasoning

ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
COPIED = ("temperature", "top_p", "parallel_tool_calls", "user", "stream")
TEXT_PARTS = ("input_text", "output_text", "text")
TOOL_CHOICES = ("auto", "none", "required")
FUNCTION_FIELDS = ("description", "parameters", "strict")
SCHEMA_FIELDS = ("description", "schema", "strict")


class Unreadable(ValueError):
    """A Responses call Momor cannot read; `param` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class Translated:
    request: Json
    """The Chat Completions request (routing fields left to the caller)."""
    openai_only: str = ""
    """What of the call only OpenAI's own API can carry ("" when nothing is)."""


def chat_request_of(request: Mapping[str, Any]) -> Translated:
    """The call as a Chat Completions request; raises Unreadable."""
    reasons = _Reasons()
    out: Json = {"messages": _messages(request, reasons)}
    out.update({name: request[name] for name in COPIED if request.get(name) is not None})
    tools = _tools(request.get("tools"), reasons)
    if tools:
        out["tools"] = tools
    choice = _tool_choice(request.get("tool_choice"), reasons)
    if choice is not None:
        out["tool_choice"] = choice
    response_format = _response_format(request.get("text"))
    if response_format is not None:
        out["response_format"] = response_format
    effort = _effort(request.get("reasoning"))
    if effort is not None:
        out["reasoning_effort"] = effort
    if request.get("max_output_tokens") is not None:
        out["max_completion_tokens"] = request["max_output_tokens"]
    if request.get("prompt") is not None:
        reasons.note("prompt templates ('prompt')")
    return Translated(out, reasons.first)


@dataclass(slots=True)
class _Reasons:
    """Why the call needs OpenAI's own API: the first reason found."""

    first: str = ""

    def note(self, reason: str) -> None:
        self.first = self.first or reason


@dataclass(slots=True)
class _Turn:
    """An assistant turn as its items arrive: its text, its calls, its reasoning."""

    texts: list[str] = field(default_factory=list)
    calls: list[Json] = field(default_factory=list)
    details: list[Json] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    @property
    def said(self) -> bool:
        return bool(self.texts or self.calls)

    def message(self) -> Json | None:
        """The assistant message, None for a turn that said nothing (reasoning alone)."""
        if not self.said:
            return None
        out: Json = {"role": "assistant", "content": "".join(self.texts) or None}
        if not self.calls and out["content"] is None:
            out["content"] = ""
        if self.calls:
            out["tool_calls"] = self.calls
        if self.details:
            out["reasoning_details"] = self.details
        elif self.summary:
            out["reasoning"] = "".join(self.summary)
        return out


def _messages(request: Mapping[str, Any], reasons: _Reasons) -> list[Json]:
    out: list[Json] = []
    instructions = request.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise Unreadable("'instructions' must be a string.", "instructions")
    if instructions:
        out.append({"role": "system", "content": instructions})
    value = request.get("input")
    if isinstance(value, str):
        return [*out, {"role": "user", "content": value}]
    if not isinstance(value, list):
        raise Unreadable("'input' must be a string or a list of input items.", "input")
    out += _items(value, reasons)
    if not out and not reasons.first:
        raise Unreadable("'input' holds nothing a model can be asked.", "input")
    return out


def _items(items: list[Any], reasons: _Reasons) -> list[Json]:
    out: list[Json] = []
    turn = _Turn()

    def close() -> None:
        nonlocal turn
        message = turn.message()
        if message is not None:
            out.append(message)
        turn = _Turn()

    for index, item in enumerate(items):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise Unreadable("Each input item must be an object.", param)
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "assistant":
            if turn.said:
                close()
            turn.texts.append(_assistant_text(item.get("content"), param))
        elif kind == "function_call":
            turn.calls.append(_function_call(item, param))
        elif kind == "reasoning":
            if turn.said:
                close()
            _reasoning(item, turn, param)
        else:
            close()
            message = _other(item, kind, param, reasons)
            if message is not None:
                out.append(message)
    close()
    return out


def _other(item: Json, kind: object, param: str, reasons: _Reasons) -> Json | None:
    """A user-side item as its message: a message of another role, a function's output; an
    item only OpenAI can carry is noted and left out."""
    if kind == "message":
        return _message(item, param, reasons)
    if kind == "function_call_output":
        call_id = _text(item.get("call_id"), f"{param}.call_id")
        content = _content(item.get("output"), f"{param}.output", reasons)
        return {"role": "tool", "tool_call_id": call_id, "content": content}
    if kind == "item_reference":
        raise Unreadable(
            "Momor keeps no items (store is false): an item_reference cannot be resolved; "
            "send the item itself.",
            param,
        )
    if not isinstance(kind, str):
        raise Unreadable("An input item's 'type' must be a string.", f"{param}.type")
    reasons.note(f"input items of type {kind}")
    return None


def _message(item: Json, param: str, reasons: _Reasons) -> Json:
    given = item.get("role")
    role = ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise Unreadable(
            "A message's 'role' must be user, system, developer or assistant.", f"{param}.role"
        )
    content = _content(item.get("content"), f"{param}.content", reasons)
    return {"role": role, "content": content}


def _content(value: object, param: str, reasons: _Reasons) -> str | list[Json]:
    """Message (or function output) content: a string, or its parts as Chat Completions'; all
    text parts are one string."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise Unreadable("Content must be a string or a list of content parts.", param)
    parts = [p for i, v in enumerate(value) if (p := _part(v, f"{param}[{i}]", reasons))]
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _part(value: object, param: str, reasons: _Reasons) -> Json | None:
    if not isinstance(value, dict):
        raise Unreadable("Each content part must be an object.", param)
    kind = value.get("type")
    if kind in TEXT_PARTS:
        return {"type": "text", "text": _text(value.get("text"), f"{param}.text")}
    if kind == "input_image":
        return _image(value, param, reasons)
    if kind == "input_file":
        return _file(value, param, reasons)
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": value.get("input_audio")}
    reasons.note(f"content parts of type {kind}")
    return None


def _image(value: Json, param: str, reasons: _Reasons) -> Json | None:
    url = value.get("image_url")
    if url is None:
        reasons.note("images given by file_id")
        return None
    image: Json = {"url": _text(url, f"{param}.image_url")}
    if value.get("detail") is not None:
        image["detail"] = value["detail"]
    return {"type": "image_url", "image_url": image}


def _file(value: Json, param: str, reasons: _Reasons) -> Json | None:
    data = value.get("file_data")
    if data is None:
        reasons.note("files given by file_id or file_url")
        return None
    file: Json = {"file_data": _text(data, f"{param}.file_data")}
    if value.get("filename") is not None:
        file["filename"] = value["filename"]
    return {"type": "file", "file": file}


def _assistant_text(value: object, param: str) -> str:
    """An assistant message's text: its output text (and refusal) parts, as one string."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise Unreadable("Content must be a string or a list of content parts.", param)
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        name = "refusal" if kind == "refusal" else "text"
        if kind not in (*TEXT_PARTS, "refusal"):
            raise Unreadable("An assistant message holds output_text or refusal parts.", param)
        texts.append(_text(part.get(name), f"{param}[{index}].{name}"))
    return "".join(texts)


def _function_call(item: Json, param: str) -> Json:
    name = _text(item.get("name"), f"{param}.name")
    if item.get("namespace") is not None:
        name = namespaced(_text(item["namespace"], f"{param}.namespace"), name)
    return {
        "id": _text(item.get("call_id"), f"{param}.call_id"),
        "type": "function",
        "function": {"name": name, "arguments": _text(item.get("arguments"), f"{param}.arguments")},
    }


def _reasoning(item: Json, turn: _Turn, param: str) -> None:
    """A reasoning item on the turn it opens: Momor's own replayed as reasoning_details,
    OpenAI's encryption left out (its summary kept as text)."""
    content = item.get("encrypted_content")
    if content is not None:
        try:
            details = read_momor_reasoning(_text(content, f"{param}.encrypted_content"))
        except ValueError as exc:
            raise Unreadable(str(exc), f"{param}.encrypted_content") from None
        if details is not None:
            turn.details += details
            return
    summary = item.get("summary")
    for part in summary if isinstance(summary, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            turn.summary.append(part["text"])


def _tools(value: object, reasons: _Reasons) -> list[Json]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Unreadable("'tools' must be a list of tools.", "tools")
    out: list[Json] = []
    for index, tool in enumerate(value):
        param = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise Unreadable("Each tool must be an object.", param)
        if tool.get("type") == "namespace":
            out += _namespace(tool, param, reasons)
        elif tool.get("type") == "function":
            out.append(_function_tool(tool, param))
        else:
            reasons.note(f"hosted tools ({tool.get('type')})")
    return out


def _namespace(tool: Json, param: str, reasons: _Reasons) -> list[Json]:
    """A namespace tool's functions, each named with its namespace."""
    namespace = _text(tool.get("name"), f"{param}.name")
    inner = tool.get("tools")
    if not isinstance(inner, list):
        raise Unreadable("A namespace's 'tools' must be a list of tools.", f"{param}.tools")
    out = []
    for index, function in enumerate(inner):
        where = f"{param}.tools[{index}]"
        if not isinstance(function, dict):
            raise Unreadable("Each tool must be an object.", where)
        if function.get("type") == "function":
            out.append(_function_tool(function, where, namespace))
        else:
            reasons.note(f"hosted tools ({function.get('type')})")
    return out


def _function_tool(tool: Json, param: str, namespace: str | None = None) -> Json:
    name = _text(tool.get("name"), f"{param}.name")
    function: Json = {"name": name if namespace is None else namespaced(namespace, name)}
    function.update({k: tool[k] for k in FUNCTION_FIELDS if tool.get(k) is not None})
    return {"type": "function", "function": function}


def _tool_choice(value: object, reasons: _Reasons) -> str | Json | None:
    if value is None:
        return None
    if isinstance(value, str) and value in TOOL_CHOICES:
        return value
    if not isinstance(value, dict):
        raise Unreadable("'tool_choice' must be auto, none, required or an object.", "tool_choice")
    if value.get("type") == "function":
        name = _text(value.get("name"), "tool_choice.name")
        return {"type": "function", "function": {"name": name}}
    reasons.note(f"a tool_choice of type {value.get('type')}")
    return None


def _response_format(value: object) -> Json | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Unreadable("'text' must be an object.", "text")
    form = value.get("format")
    if form is None:
        return None
    kind = form.get("type") if isinstance(form, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind != "json_schema" or not isinstance(form, dict):
        raise Unreadable("'text.format' must be of type text, json_object or json_schema.", "text")
    schema: Json = {"name": _text(form.get("name"), "text.format.name")}
    schema.update({k: form[k] for k in SCHEMA_FIELDS if form.get(k) is not None})
    return {"type": "json_schema", "json_schema": schema}


def _effort(value: object) -> object:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Unreadable("'reasoning' must be an object of effort and summary.", "reasoning")
    return value.get("effort")


def _text(value: object, param: str) -> str:
    if not isinstance(value, str):
        raise Unreadable(f"'{param}' must be a string.", param)
    return value
