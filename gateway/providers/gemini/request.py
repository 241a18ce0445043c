"""A Chat Completions body as a Gemini `GenerateContentRequest` (the same body serves the Gemini
API and Vertex AI): messages as `systemInstruction` and `contents`, tools as function
declarations, and the sampling fields as `generationConfig`. Fields Gemini has no counterpart
for (user, parallel_tool_calls, stream_options, store...) are left off.

An assistant message sent back replays its `reasoning_details` entries whose `data` holds
`google.thought_signature` (the shape the answer gives them: `{"type": "reasoning.text",
"text": ..., "data": {"google.thought_signature": sig}}`) as thought parts, a
`{"type": "reasoning.encrypted", "data": {"google.thought_signature": sig}}` entry (a signature
Gemini put on its text) on the text, and each tool call's
`extra_content.google.thought_signature` on its function call part.

Reference: https://ai.google.dev/api/generate-content#request-body"""

from __future__ import annotations

import mimetypes
from typing import Any

import orjson

from gateway.providers.contract import (
    CannotCarry,
    ChatRequest,
    Json,
    ReasoningAsk,
    Target,
    fields,
    listed,
)
from gateway.providers.reasoning import effort_for, effort_of, reasoning_asked

SIGNATURE_KEY = "google.thought_signature"
ENCRYPTED = "reasoning.encrypted"
# Gemini 3 checks that each function call of the current turn carries its thought signature;
# a call made elsewhere (another provider, an edited history) has none, and this documented
# value skips the check: https://ai.google.dev/gemini-api/docs/thought-signatures
SKIP_SIGNATURE = "skip_thought_signature_validator"
CALLING_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
# Google's OpenAI compatibility layer maps efforts to budgets this way for budget models:
# https://ai.google.dev/gemini-api/docs/openai#thinking
BUDGETS = {"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768}
# The thinking budgets Gemini 2.5 takes (ai.google.dev/gemini-api/docs/thinking): the least
# and most, and whether 0 (no thinking) is one. 2.5 Pro cannot turn thinking off.
BUDGET_RANGES = (
    ("gemini-2.5-pro", 128, 32768, False),
    ("gemini-2.5-flash-lite", 512, 24576, True),
    ("gemini-2.5-flash", 1, 24576, True),
)
ANY_BUDGET = ("", 1, 24576, True)
# The thinking levels Gemini 3 takes; each model takes those the catalog lists for it.
LEVELS = ("minimal", "low", "medium", "high")
SERVICE_TIERS = {"flex": "flex", "priority": "priority", "default": "standard"}
AUDIO_TYPES = {"mp3": "audio/mp3", "wav": "audio/wav"}
SAMPLING = (
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("seed", "seed"),
    ("presence_penalty", "presencePenalty"),
    ("frequency_penalty", "frequencyPenalty"),
    ("n", "candidateCount"),
    ("logprobs", "responseLogprobs"),
    ("top_logprobs", "logprobs"),
)


def request_body(body: ChatRequest, target: Target) -> Json:
    """The GenerateContentRequest for `body` on `target`; raises CannotCarry."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise CannotCarry("the call has no messages")
    system, contents = split_messages(messages)
    out: Json = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": system}
    out.update(tool_fields(body))
    config = generation_config(body, target)
    if config:
        out["generationConfig"] = config
    out.update(extra_fields(body))
    return out


# Messages


def split_messages(messages: list[Any]) -> tuple[list[Json], list[Json]]:
    """The system instruction's parts and the conversation's contents."""
    system: list[Json] = []
    contents: list[Json] = []
    names = _call_names(messages)
    for message in messages:
        if not isinstance(message, dict):
            raise CannotCarry("a message is not an object")
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_text_parts(message.get("content")))
        elif role == "user":
            _append(contents, "user", user_parts(message.get("content")))
        elif role == "assistant":
            _append(contents, "model", assistant_parts(message))
        elif role == "tool":
            _append(contents, "user", [function_response(message, names)])
        else:
            raise CannotCarry(f"a message with role {role!r}")
    return system, contents


def _append(contents: list[Json], role: str, parts: list[Json]) -> None:
    """Consecutive turns of one role go as one content, as Gemini's turns alternate (a tool
    answer's function responses and the user's next words, for instance)."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def _call_names(messages: list[Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            for call in listed(message.get("tool_calls"), "tool_calls"):
                if isinstance(call, dict) and isinstance(call.get("function"), dict):
                    names[str(call.get("id"))] = str(call["function"].get("name") or "")
    return names


def _text_parts(content: object) -> list[Json]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, list):
        return [_text_part(p) for p in content if _kind(p) == "text"]
    return []


def _text_part(part: Json) -> Json:
    return {"text": str(part.get("text") or "")}


def _kind(part: object) -> str:
    return str(part.get("type")) if isinstance(part, dict) else ""


def user_parts(content: object) -> list[Json]:
    if not isinstance(content, list):
        return _text_parts(content)
    return [content_part(part) for part in content]


def content_part(part: object) -> Json:
    if not isinstance(part, dict):
        raise CannotCarry("a content part that is not an object")
    kind = _kind(part)
    if kind == "text":
        return _text_part(part)
    if kind == "image_url":
        return image_part(part.get("image_url"))
    if kind == "file":
        return file_part(part.get("file"))
    if kind == "input_audio":
        return audio_part(part.get("input_audio"))
    raise CannotCarry(f"a content part of type {kind or 'unknown'!r}")


def image_part(image: object) -> Json:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise CannotCarry("an image_url part without a url")
    if url.startswith("data:"):
        return inline_data(url)
    if url.startswith(("http://", "https://")):
        return {"fileData": {"fileUri": url, "mimeType": guess_type(url, "image/jpeg")}}
    raise CannotCarry("an image that is neither a data URL nor an http(s) address")


def file_part(file: object) -> Json:
    if not isinstance(file, dict) or not isinstance(file.get("file_data"), str):
        raise CannotCarry("a file part without file_data (file ids are OpenAI's own)")
    data: str = file["file_data"]
    if data.startswith("data:"):
        return inline_data(data)
    filename = str(file.get("filename") or "")
    return {"inlineData": {"mimeType": guess_type(filename, "application/pdf"), "data": data}}


def audio_part(audio: object) -> Json:
    if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
        raise CannotCarry("an input_audio part without data")
    kind = str(audio.get("format") or "wav").lower()
    mime = AUDIO_TYPES.get(kind, f"audio/{kind}")
    return {"inlineData": {"mimeType": mime, "data": audio["data"]}}


def inline_data(url: str) -> Json:
    """A `data:<mime>;base64,<data>` URL as Gemini's inline bytes."""
    header, _, data = url.partition(",")
    mime = header.removeprefix("data:").split(";")[0] or "application/octet-stream"
    if ";base64" not in header:
        raise CannotCarry("a data URL that is not base64")
    return {"inlineData": {"mimeType": mime, "data": data}}


def guess_type(name: str, default: str) -> str:
    path = name.split("?")[0].split("#")[0]
    return mimetypes.guess_type(path)[0] or default


def assistant_parts(message: Json) -> list[Json]:
    """Replayed thoughts first, then the text, then the function calls (the order Gemini
    answered them in)."""
    details = message.get("reasoning_details")
    parts = thought_parts(details)
    parts.extend(_signed_text(_text_parts(message.get("content")), details))
    calls = [function_call(c) for c in listed(message.get("tool_calls"), "tool_calls")]
    if calls and not any("thoughtSignature" in c for c in calls):
        calls[0]["thoughtSignature"] = SKIP_SIGNATURE
    parts.extend(calls)
    return parts


def thought_parts(details: object) -> list[Json]:
    """Reasoning blocks Gemini signed, replayed as thought parts with their signature; blocks
    without one (another provider's) carry nothing Gemini checks and are left out."""
    if not isinstance(details, list):
        return []
    parts: list[Json] = []
    for detail in details:
        signature = _signature(detail)
        if signature and detail.get("type") != ENCRYPTED:
            text = str(detail.get("text") or "")
            parts.append({"text": text, "thought": True, "thoughtSignature": signature})
    return parts


def _signed_text(parts: list[Json], details: object) -> list[Json]:
    """The text with the signature Gemini put on it (the last one given) on its last part."""
    entries = details if isinstance(details, list) else []
    signatures = [
        _signature(d) for d in entries if isinstance(d, dict) and d.get("type") == ENCRYPTED
    ]
    signatures = [s for s in signatures if s]
    if not signatures:
        return parts
    parts = parts or [{"text": ""}]
    parts[-1]["thoughtSignature"] = signatures[-1]
    return parts


def _signature(detail: object) -> str:
    data = detail.get("data") if isinstance(detail, dict) else None
    signature = data.get(SIGNATURE_KEY) if isinstance(data, dict) else None
    return signature if isinstance(signature, str) else ""


def function_call(call: object) -> Json:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise CannotCarry("a tool call that is not a function call")
    function = call["function"]
    part: Json = {"functionCall": {"name": function.get("name"), "args": _args(function)}}
    extra = call.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _args(function: Json) -> Json:
    raw = function.get("arguments")
    try:
        args = orjson.loads(raw) if isinstance(raw, str | bytes) and raw else {}
    except orjson.JSONDecodeError as exc:
        raise CannotCarry("tool call arguments that are not JSON") from exc
    return args if isinstance(args, dict) else {"value": args}


def function_response(message: Json, names: dict[str, str]) -> Json:
    """A tool message as a function response, named after the call it answers; Gemini takes
    an object as the response, so anything else is wrapped as `{"result": ...}`."""
    call_id = str(message.get("tool_call_id") or "")
    name = names.get(call_id) or str(message.get("name") or "")
    content = message.get("content")
    text = content if isinstance(content, str) else "".join(p["text"] for p in _text_parts(content))
    try:
        value: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = text
    response = value if isinstance(value, dict) else {"result": value}
    return {"functionResponse": {"name": name, "response": response}}


# Tools


def tool_fields(body: ChatRequest) -> Json:
    out: Json = {}
    tools = listed(body.get("tools"), "tools")
    if tools:
        out["tools"] = [{"functionDeclarations": [declaration(t) for t in tools]}]
    choice = body.get("tool_choice")
    if choice is not None and tools:
        out["toolConfig"] = {"functionCallingConfig": calling_config(choice)}
    return out


def declaration(tool: object) -> Json:
    """A function tool as a declaration; its parameters go as JSON Schema, which Gemini takes
    whole (`parameters` takes only its OpenAPI subset)."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise CannotCarry("a tool that is not a function")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise CannotCarry("a function tool without its function object")
    out: Json = {"name": function.get("name")}
    if function.get("description"):
        out["description"] = function["description"]
    if isinstance(function.get("parameters"), dict):
        out["parametersJsonSchema"] = function["parameters"]
    return out


def calling_config(choice: object) -> Json:
    if isinstance(choice, str):
        if choice not in CALLING_MODES:
            raise CannotCarry(f"tool_choice {choice!r}")
        return {"mode": CALLING_MODES[choice]}
    function = choice.get("function") if isinstance(choice, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise CannotCarry("a tool_choice that names no function")
    return {"mode": "ANY", "allowedFunctionNames": [function["name"]]}


# Generation config


def generation_config(body: ChatRequest, target: Target) -> Json:
    config: Json = {}
    given = fields(body)
    for name, gemini in SAMPLING:
        if given.get(name) is not None:
            config[gemini] = given[name]
    ceiling = sent_ceiling(body)
    if ceiling is not None:
        config["maxOutputTokens"] = ceiling
    stop = body.get("stop")
    if stop:
        config["stopSequences"] = [stop] if isinstance(stop, str) else listed(stop, "stop")
    config.update(response_format(body.get("response_format")))
    thinking = thinking_config(body, target)
    if thinking:
        config["thinkingConfig"] = thinking
    return config


def sent_ceiling(body: ChatRequest) -> object:
    """The output ceiling as sent (`maxOutputTokens`): max_completion_tokens when the call
    holds it, else max_tokens."""
    return body.get("max_completion_tokens", body.get("max_tokens"))


def response_format(value: object) -> Json:
    if not isinstance(value, dict) or value.get("type") not in ("json_object", "json_schema"):
        return {}
    out: Json = {"responseMimeType": "application/json"}
    if value["type"] != "json_schema":
        return out
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise CannotCarry("'response_format.json_schema' must be an object")
    if isinstance(spec.get("schema"), dict):
        out["responseJsonSchema"] = spec["schema"]
    return out


def thinking_config(body: ChatRequest, target: Target) -> Json:
    """The call's reasoning as a thinking budget (Gemini 2.5, whose ids start with gemini-2)
    or a thinking level (Gemini 3), thoughts included unless the call excludes them; nothing
    for a model that takes no effort or a call that asks nothing of reasoning."""
    ask = reasoning_asked(body)
    if ask is None or not target.reasoning_efforts or (ask.effort is None and not ask.thinks):
        return {}
    if target.upstream_id.startswith("gemini-2"):
        budget = thinking_budget(ask, target)
        if budget == 0:
            return {"thinkingBudget": 0}
        return {"thinkingBudget": budget, "includeThoughts": not ask.exclude}
    takes = tuple(e for e in target.reasoning_efforts if e in LEVELS)
    level = effort_for(effort_of(ask), takes)
    if level is None:
        return {}
    return {"thinkingLevel": level.upper(), "includeThoughts": not ask.exclude}


def thinking_budget(ask: ReasoningAsk, target: Target) -> int:
    """The budget asked, else the effort's (as the offering takes it), within the range the
    model takes: effort "none" is 0 where the model can stop thinking, else its least."""
    _, least, most, stops = next(
        (r for r in BUDGET_RANGES if target.upstream_id.startswith(r[0])), ANY_BUDGET
    )
    if ask.max_tokens is not None:
        budget = ask.max_tokens
    else:
        effort = effort_for(ask.effort, target.reasoning_efforts)
        budget = BUDGETS.get(effort or "medium", BUDGETS["medium"])
    if budget == 0 and stops:
        return 0
    return min(max(budget, least), most)


def extra_fields(body: ChatRequest) -> Json:
    """metadata as labels (both APIs take them: the SDK sends `labels` to each) and
    service_tier as the tier Gemini names the same way; `auto` and `scale` have none."""
    out: Json = {}
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and metadata:
        out["labels"] = {str(k): str(v) for k, v in metadata.items()}
    tier = SERVICE_TIERS.get(str(body.get("service_tier")))
    if tier:
        out["serviceTier"] = tier
    return out
