"""A Chat Completions body as an Anthropic Messages API request body.

What goes, as the spec's translation table says:

- system and developer messages, wherever they stand, become the top-level `system` as text
  blocks (with their `cache_control`); the other messages become alternating user and
  assistant turns, consecutive turns of one role merged (tool results join the user turn);
- text parts keep their `cache_control`; an `image_url` by data URL goes as a base64 image
  source and by http(s) address as a url source; a `file` part holding a PDF goes as a base64
  `document`, one holding text (`text/*`) as a text block of its decoded text; `input_audio`,
  file ids and other files cannot be carried (`CannotCarry`), so the call moves on;
- an assistant turn sent back replays its `reasoning_details` first (see `replayed_reasoning`),
  then its text, then its `tool_calls` as `tool_use` blocks (arguments parsed into `input`);
- tools, tool_choice and parallel_tool_calls; a json_schema `response_format` as
  `output_config.format`; temperature, top_p, top_k, stop (as `stop_sequences`),
  service_tier ("default" as "standard_only", "auto" as "auto", others left off) and `user`
  as `metadata.user_id`; seed, the penalties, n, logprobs, top_logprobs and metadata are left
  off, as is every field Anthropic has no counterpart for.

The output ceiling is always sent, as Anthropic requires one: max_completion_tokens, else
max_tokens, else `DEFAULT_MAX_TOKENS` (4096), plus the thinking budget when the client sent no
ceiling and the call thinks.

Reasoning (`reasoning`, its aliases read by `reasoning_asked`; the effort mapped to one the
offering takes with `effort_for`):

- offerings whose efforts include "xhigh" are Anthropic's adaptive-thinking models (Opus 4.6
  and later): they get `thinking: {"type": "adaptive"}` and `output_config.effort` (a budget
  asked stands for the effort `effort_of` gives it);
- the others get manual thinking, `{"type": "enabled", "budget_tokens": N}`: N is the budget
  asked (`reasoning.max_tokens`), else the effort's share of the call's ceiling (`SHARES`:
  minimal 10%, low 20%, medium 50%, high 80%, xhigh 95%), else, with no ceiling, the
  effort's budget from `BUDGETS` (low 1024, medium 4096, high 16384, xhigh 32768) on top of
  the default ceiling. Anthropic takes a budget of at least 1024 and below `max_tokens`
  (docs.claude.com, extended thinking): N is raised to 1024 and held below the ceiling, and a
  ceiling of 1024 or less leaves the call without thinking;
- effort "none" (`enabled: false`), an offering that lists no efforts, a call that asks no
  reasoning, or a `tool_choice` that forces a tool (Anthropic takes thinking only beside
  `auto` and `none` tool choices): no thinking.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from gateway.providers.contract import (
    CannotCarry,
    ChatRequest,
    Json,
    ReasoningAsk,
    fields,
    listed,
)
from gateway.providers.reasoning import effort_for, effort_of, reasoning_asked

DEFAULT_MAX_TOKENS = 4096
MIN_BUDGET = 1024
SHARES = {"minimal": 0.1, "low": 0.2, "medium": 0.5, "high": 0.8, "xhigh": 0.95}
BUDGETS = {
    "minimal": 1024,
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 32768,
    "max": 65536,
}
ADAPTIVE_MARKERS = frozenset({"xhigh", "max"})
DEFAULT_EFFORT = "medium"
SIGNATURE_KEY = "anthropic.signature"
REDACTED_KEY = "anthropic.redacted"
PASSED_AS_IS = ("temperature", "top_p", "top_k")
SERVICE_TIERS = {"auto": "auto", "default": "standard_only"}
TOOL_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def request_body(
    body: ChatRequest, upstream_id: str, efforts: tuple[str, ...], stream: bool
) -> Json:
    """The Messages API body for this call on this offering; raises CannotCarry."""
    found = body.get("messages")
    messages: list[Any] = found if isinstance(found, list) else []
    out: Json = {"model": upstream_id}
    system = system_blocks(messages)
    out["messages"] = conversation(messages)
    if system:
        out["system"] = system
    out.update(_reasoning_and_ceiling(body, efforts))
    out.update(_sampling(body))
    out.update(_tools(body))
    _structured_output(body, out)
    if stream:
        out["stream"] = True
    return out


# Reasoning and the ceiling


def sent_ceiling(body: ChatRequest, efforts: tuple[str, ...]) -> int:
    """The `max_tokens` the call is sent with on an offering taking these efforts."""
    ceiling: int = _reasoning_and_ceiling(body, efforts)["max_tokens"]
    return ceiling


def _reasoning_and_ceiling(body: ChatRequest, efforts: tuple[str, ...]) -> Json:
    ceiling = _client_ceiling(body)
    ask = reasoning_asked(body)
    if ask is None or not ask.thinks or not efforts or _forces_tool(body.get("tool_choice")):
        return {"max_tokens": ceiling or DEFAULT_MAX_TOKENS}
    if ADAPTIVE_MARKERS & set(efforts):
        return _adaptive(ask, efforts, ceiling)
    return _manual(ask, efforts, ceiling)


def _adaptive(ask: ReasoningAsk, efforts: tuple[str, ...], ceiling: int | None) -> Json:
    effort = effort_for(effort_of(ask), efforts) or DEFAULT_EFFORT
    room = ask.max_tokens or BUDGETS.get(effort, BUDGETS[DEFAULT_EFFORT])
    return {
        "max_tokens": ceiling or DEFAULT_MAX_TOKENS + room,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": effort},
    }


def _manual(ask: ReasoningAsk, efforts: tuple[str, ...], ceiling: int | None) -> Json:
    effort = effort_for(ask.effort, efforts) or DEFAULT_EFFORT
    if ask.max_tokens is not None:
        budget = ask.max_tokens
    elif ceiling is not None:
        budget = int(ceiling * SHARES.get(effort, SHARES[DEFAULT_EFFORT]))
    else:
        budget = BUDGETS.get(effort, BUDGETS[DEFAULT_EFFORT])
    budget = max(budget, MIN_BUDGET)
    if ceiling is None:
        return {
            "max_tokens": DEFAULT_MAX_TOKENS + budget,
            "thinking": {"type": "enabled", "budget_tokens": budget},
        }
    budget = min(budget, ceiling - 1)
    if budget < MIN_BUDGET:
        return {"max_tokens": ceiling}
    return {"max_tokens": ceiling, "thinking": {"type": "enabled", "budget_tokens": budget}}


def _forces_tool(choice: object) -> bool:
    return choice == "required" or (isinstance(choice, dict) and choice.get("type") == "function")


def _client_ceiling(body: ChatRequest) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


# Sampling and other one-to-one fields


def _sampling(body: ChatRequest) -> Json:
    given = fields(body)
    out: Json = {name: given[name] for name in PASSED_AS_IS if given.get(name) is not None}
    stop = body.get("stop")
    if isinstance(stop, str):
        out["stop_sequences"] = [stop]
    elif isinstance(stop, list) and stop:
        out["stop_sequences"] = stop
    asked = body.get("service_tier")
    tier = SERVICE_TIERS.get(asked) if isinstance(asked, str) else None
    if tier:
        out["service_tier"] = tier
    if isinstance(body.get("user"), str) and body["user"]:
        out["metadata"] = {"user_id": body["user"]}
    return out


def _structured_output(body: ChatRequest, out: Json) -> None:
    """json_schema as `output_config.format` (Anthropic's structured outputs, GA); json_object
    has no counterpart and is left off."""
    response_format = body.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise CannotCarry("'response_format.json_schema' must be an object")
    schema = spec.get("schema")
    if isinstance(schema, dict):
        config = out.setdefault("output_config", {})
        config["format"] = {"type": "json_schema", "schema": schema}


# Tools


def _tools(body: ChatRequest) -> Json:
    out: Json = {}
    tools = [tool_definition(t) for t in listed(body.get("tools"), "tools") if _is_function(t)]
    if tools:
        out["tools"] = tools
    choice = tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _is_function(tool: object) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("function"), dict)


def tool_definition(tool: Json) -> Json:
    function = tool["function"]
    out: Json = {"name": function.get("name")}
    if function.get("description"):
        out["description"] = function["description"]
    parameters = function.get("parameters")
    out["input_schema"] = parameters if isinstance(parameters, dict) else {"type": "object"}
    if isinstance(function.get("strict"), bool):
        out["strict"] = function["strict"]
    return out


def tool_choice(choice: object, parallel: object) -> Json | None:
    out: Json | None = None
    if isinstance(choice, str) and choice in TOOL_CHOICES:
        out = {"type": TOOL_CHOICES[choice]}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        out = {"type": "tool", "name": choice["function"].get("name")}
    if parallel is False:
        out = out or {"type": "auto"}
        if out["type"] != "none":
            out["disable_parallel_tool_use"] = True
    return out


# Messages


def system_blocks(messages: list[Any]) -> list[Json]:
    return [
        block
        for message in messages
        if isinstance(message, dict) and message.get("role") in ("system", "developer")
        for block in _text_blocks(message.get("content"))
    ]


def conversation(messages: list[Any]) -> list[Json]:
    """Alternating turns: each message as a turn, consecutive turns of one role merged."""
    turns: list[Json] = []
    for message in messages:
        turn = _turn(message) if isinstance(message, dict) else None
        if turn is None:
            continue
        if turns and turns[-1]["role"] == turn["role"]:
            turns[-1]["content"].extend(turn["content"])
        else:
            turns.append(turn)
    return turns


def _turn(message: Json) -> Json | None:
    role = message.get("role")
    if role == "user":
        return {"role": "user", "content": user_blocks(message.get("content"))}
    if role == "assistant":
        return {"role": "assistant", "content": assistant_blocks(message)}
    if role == "tool":
        return {"role": "user", "content": [tool_result(message)]}
    return None


def user_blocks(content: object) -> list[Json]:
    if isinstance(content, str):
        return _text_blocks(content)
    blocks: list[Json] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict):
            blocks.extend(_part_blocks(part))
    return blocks


def _part_blocks(part: Json) -> list[Json]:
    kind = part.get("type")
    if kind == "text":
        return _text_blocks([part])
    if kind == "image_url":
        return [_cached(image_block(part.get("image_url")), part)]
    if kind == "file":
        return [_cached(file_block(part.get("file")), part)]
    if kind == "input_audio":
        raise CannotCarry("input_audio")
    return []


def _text_blocks(content: object) -> list[Json]:
    """Text as blocks, empty text left out (Anthropic refuses empty text blocks)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[Json] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
            blocks.append(_cached({"type": "text", "text": part["text"]}, part))
    return blocks


def _cached(block: Json, part: Json) -> Json:
    if isinstance(part.get("cache_control"), dict):
        block["cache_control"] = part["cache_control"]
    return block


def image_block(image: object) -> Json:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise CannotCarry("image_url without a url")
    if url.startswith("data:"):
        media_type, data = _data_url(url)
        source: Json = {"type": "base64", "media_type": media_type, "data": data}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source}


def file_block(file: object) -> Json:
    data_url = file.get("file_data") if isinstance(file, dict) else None
    if not isinstance(data_url, str) or not data_url.startswith("data:"):
        raise CannotCarry("file without file_data")
    media_type, data = _data_url(data_url)
    if media_type == "application/pdf":
        source = {"type": "base64", "media_type": media_type, "data": data}
        block: Json = {"type": "document", "source": source}
        if isinstance(file, dict) and file.get("filename"):
            block["title"] = file["filename"]
        return block
    if media_type.startswith("text/"):
        return {"type": "text", "text": _decoded_text(data)}
    raise CannotCarry(f"file of type {media_type}")


def _data_url(url: str) -> tuple[str, str]:
    header, _, data = url.partition(",")
    media_type = header.removeprefix("data:").split(";")[0]
    if ";base64" not in header:
        raise CannotCarry("a data URL that is not base64")
    return media_type, data


def _decoded_text(data: str) -> str:
    try:
        return base64.b64decode(data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise CannotCarry("a text file that is not base64 UTF-8") from exc


def assistant_blocks(message: Json) -> list[Json]:
    blocks = replayed_reasoning(message.get("reasoning_details"))
    content = message.get("content")
    if isinstance(content, list):
        content = [
            {**p, "type": "text", "text": p.get("refusal")}
            if isinstance(p, dict) and p.get("type") == "refusal"
            else p
            for p in content
        ]
    blocks.extend(_text_blocks(content))
    calls = listed(message.get("tool_calls"), "tool_calls")
    blocks.extend(tool_use(call) for call in calls if _is_call(call))
    return blocks


def replayed_reasoning(details: object) -> list[Json]:
    """`reasoning_details` back as the blocks Anthropic checks: a `reasoning.text` entry with
    `data["anthropic.signature"]` as a `thinking` block, a `reasoning.encrypted` entry with
    `data["anthropic.redacted"]` as a `redacted_thinking` block; entries without Anthropic's
    state (another provider's) are left off, as Anthropic refuses unsigned thinking."""
    blocks: list[Json] = []
    for detail in details if isinstance(details, list) else ():
        data = detail.get("data") if isinstance(detail, dict) else None
        if not isinstance(data, dict):
            continue
        if detail.get("type") == "reasoning.text" and isinstance(data.get(SIGNATURE_KEY), str):
            text = detail.get("text") or ""
            blocks.append({"type": "thinking", "thinking": text, "signature": data[SIGNATURE_KEY]})
        elif detail.get("type") == "reasoning.encrypted" and isinstance(
            data.get(REDACTED_KEY), str
        ):
            blocks.append({"type": "redacted_thinking", "data": data[REDACTED_KEY]})
    return blocks


def _is_call(call: object) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function"), dict)


def tool_use(call: Json) -> Json:
    function = call["function"]
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": _arguments(function.get("arguments")),
    }


def _arguments(raw: object) -> Json:
    """A call's arguments as Anthropic's `input` object; arguments that are not a JSON object
    go as an empty input."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = orjson.loads(raw) if isinstance(raw, str) and raw else {}
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def tool_result(message: Json) -> Json:
    content = message.get("content")
    result: Json = {"type": "tool_result", "tool_use_id": message.get("tool_call_id")}
    if isinstance(content, str):
        result["content"] = content
    elif isinstance(content, list):
        result["content"] = _text_blocks(content)
    return result
