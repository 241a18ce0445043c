"""A Gemini `GenerateContentResponse` as a Chat Completions answer, and Google's error bodies as
OpenAI's error object. The pieces here (parts, finish reasons, usage, logprobs) serve the plain
answer and the stream alike.

Reference: https://ai.google.dev/api/generate-content#generatecontentresponse"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.providers.contract import (
    ChatCompletion,
    Choice,
    ErrorObject,
    Failure,
    Json,
    Reply,
    Usage,
    token_count,
    tokens,
)

SIGNATURE_KEY = "google.thought_signature"
FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
ERROR_TYPES = {
    "INVALID_ARGUMENT": "invalid_request_error",
    "FAILED_PRECONDITION": "invalid_request_error",
    "OUT_OF_RANGE": "invalid_request_error",
    "NOT_FOUND": "invalid_request_error",
    "UNAUTHENTICATED": "authentication_error",
    "PERMISSION_DENIED": "permission_error",
    "RESOURCE_EXHAUSTED": "rate_limit_error",
}


@dataclass(slots=True)
class Parts:
    """One candidate's parts, read into Chat Completions' pieces."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    details: list[Json] = field(default_factory=list)
    calls: list[Json] = field(default_factory=list)


def read_parts(parts: list[Any], first_call: int = 0) -> Parts:
    """Text, thoughts (each run of thought parts one reasoning block) and function calls."""
    out = Parts()
    block: list[Json] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("thought"):
            block.append(part)
            continue
        if block:
            out.details.append(reasoning_detail(block))
            block = []
        if isinstance(part.get("functionCall"), dict):
            out.calls.append(tool_call(part, first_call + len(out.calls)))
        elif isinstance(part.get("text"), str):
            out.text.append(part["text"])
            out.details.extend(text_signature(part))
    if block:
        out.details.append(reasoning_detail(block))
    out.reasoning = [str(p.get("text") or "") for p in parts if _thought(p)]
    return out


def _thought(part: object) -> bool:
    return isinstance(part, dict) and bool(part.get("thought"))


def reasoning_detail(block: list[Json]) -> Json:
    """A run of thought parts as one `reasoning_details` entry; `data` holds the signature
    Gemini checks when the block is sent back (the last one the block carried)."""
    signatures = [p["thoughtSignature"] for p in block if p.get("thoughtSignature")]
    data = {SIGNATURE_KEY: signatures[-1]} if signatures else {}
    text = "".join(str(p.get("text") or "") for p in block)
    return {"type": "reasoning.text", "text": text, "data": data}


def text_signature(part: Json) -> list[Json]:
    """The signature Gemini put on an answer's text part, as the `reasoning_details` entry the
    text is sent back with (https://ai.google.dev/gemini-api/docs/thought-signatures)."""
    signature = part.get("thoughtSignature")
    if not isinstance(signature, str) or not signature:
        return []
    return [{"type": "reasoning.encrypted", "data": {SIGNATURE_KEY: signature}}]


def tool_call(part: Json, index: int) -> Json:
    """A function call, whole; Gemini names calls only in newer versions, so an id is made from
    the call's position when it gives none."""
    call = part["functionCall"]
    out: Json = {
        "id": str(call.get("id") or f"call_{index}"),
        "type": "function",
        "function": {
            "name": str(call.get("name") or ""),
            "arguments": orjson.dumps(call.get("args") or {}).decode(),
        },
    }
    if part.get("thoughtSignature"):
        out["extra_content"] = {"google": {"thought_signature": part["thoughtSignature"]}}
    return out


def finish_reason(native: str, calls: bool) -> str:
    if native == "MAX_TOKENS":
        return "length"
    if native in FILTERED:
        return "content_filter"
    return "tool_calls" if calls else "stop"


def usage_of(raw: object) -> Usage | None:
    """promptTokenCount includes the cached tokens; thoughts are billed as output."""
    if not isinstance(raw, dict):
        return None
    thoughts = token_count(raw.get("thoughtsTokenCount"))
    return Usage(
        prompt_tokens=tokens(raw.get("promptTokenCount"), raw.get("toolUsePromptTokenCount")),
        completion_tokens=tokens(raw.get("candidatesTokenCount"), thoughts),
        cached_tokens=token_count(raw.get("cachedContentTokenCount")),
        reasoning_tokens=thoughts,
    )


def logprobs_of(raw: object) -> Json | None:
    """Gemini's chosen and top candidates per step as OpenAI's `logprobs.content`."""
    if not isinstance(raw, dict) or not isinstance(raw.get("chosenCandidates"), list):
        return None
    tops = raw.get("topCandidates") or []
    content = []
    for step, chosen in enumerate(raw["chosenCandidates"]):
        alternatives = tops[step].get("candidates") or [] if step < len(tops) else []
        entry = _token(chosen)
        entry["top_logprobs"] = [_token(a) for a in alternatives]
        content.append(entry)
    return {"content": content}


def _token(raw: Json) -> Json:
    token = str(raw.get("token") or "")
    return {
        "token": token,
        "logprob": float(raw.get("logProbability") or 0.0),
        "bytes": list(token.encode()),
    }


# The plain answer


def reply_of(data: bytes) -> Reply:
    body = orjson.loads(data)
    if not isinstance(body, dict):
        raise ValueError("the provider's answer is not a GenerateContentResponse")
    candidates = body.get("candidates")
    if candidates:
        choices = [choice_of(c, position) for position, c in enumerate(candidates)]
    elif (body.get("promptFeedback") or {}).get("blockReason"):
        choices = [blocked_choice()]
    else:
        raise ValueError("the provider's answer holds no candidate")
    usage = usage_of(body.get("usageMetadata"))
    out: ChatCompletion = {
        "id": "",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "",
        "choices": [c for c, _ in choices],
        "usage": (usage or Usage()).as_openai(),
    }
    first = choices[0]
    return Reply(out, usage, first[0].get("finish_reason") or "", first[1])


def choice_of(candidate: Json, position: int) -> tuple[Choice, str]:
    """A candidate as a choice, with Gemini's own finish reason beside it."""
    parts = read_parts((candidate.get("content") or {}).get("parts") or [])
    message: Json = {"role": "assistant", "content": "".join(parts.text) if parts.text else None}
    if parts.reasoning:
        message["reasoning"] = "".join(parts.reasoning)
    if parts.details:
        message["reasoning_details"] = parts.details
    if parts.calls:
        message["tool_calls"] = parts.calls
    elif message["content"] is None:
        message["content"] = ""
    native = str(candidate.get("finishReason") or "")
    choice: Choice = {
        "index": int(candidate.get("index") or position),
        "message": message,
        "logprobs": logprobs_of(candidate.get("logprobsResult")),
        "finish_reason": finish_reason(native, bool(parts.calls)),
        "native_finish_reason": native,
    }
    return choice, native


def blocked_choice() -> tuple[Choice, str]:
    """A prompt Gemini blocked before answering: no candidates, only promptFeedback."""
    message = {"role": "assistant", "content": ""}
    choice: Choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": "content_filter",
        "native_finish_reason": "PROMPT_BLOCKED",
    }
    return choice, "PROMPT_BLOCKED"


# Errors


def failure_of(status: int, data: bytes) -> Failure:
    error = _google_error(data)
    if error is None:
        return Failure(status, f"HTTP {status}")
    return google_failure(error, status)


def google_failure(error: Json, status: int | None = None) -> Failure:
    """Google's `{"error": {"code", "message", "status"}}` as OpenAI's error object."""
    code = status or _status(error.get("code"))
    name = str(error.get("status") or "")
    message = str(error.get("message") or f"HTTP {code}")
    kind = ERROR_TYPES.get(name) or _type_by_status(code)
    shaped: ErrorObject = {"message": message, "type": kind, "param": None, "code": name or None}
    return Failure(code, message, shaped)


def _status(code: object) -> int | None:
    """The HTTP status an error body names, where it names one."""
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
        return code
    return None


def _type_by_status(status: int | None) -> str:
    if status is not None and status < 500:
        return "invalid_request_error"
    return "server_error"


def _google_error(data: bytes) -> Json | None:
    """The error object of a body, which streamGenerateContent may wrap in a list."""
    try:
        body = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return None
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None
