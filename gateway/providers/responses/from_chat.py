"""A Chat Completions answer (the relay's, for any offering but OpenAI's own) as the Response
OpenAI's Responses API answers, its first choice as output items in the order OpenAI writes
them:

- `message.reasoning`: a `reasoning` item, the text as its `summary` (`summary_text`); its
  `reasoning_details` as the item's `encrypted_content` (`wire.momor_reasoning`) when the
  call's `include` names `reasoning.encrypted_content`;
- `message.content` (and `refusal`): a `message` item of `output_text` (and `refusal`) parts;
- `message.tool_calls`: a `function_call` item each, the call's `id` as its `call_id` (a
  namespace's function, named as `wire.namespaced`, with its `namespace` and own name);
- `finish_reason` `length` or `content_filter`: status `incomplete`, with
  `incomplete_details.reason` `max_output_tokens` or `content_filter`; else `completed`;
- `usage`: `input_tokens` (`cached_tokens`), `output_tokens` (`reasoning_tokens`);
- `id` (Momor's request id), `created`, `model`: `id` (`resp_...`), `created_at`, `model`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.providers.contract import Json, Usage
from gateway.providers.responses.wire import (
    ResponsesRequest,
    finished,
    item_id,
    momor_reasoning,
    namespaced_functions,
    response_id,
    response_object,
    responses_usage,
)


def response_of(chat: Json, request: ResponsesRequest, *, encrypted: bool) -> Json:
    """The Response for this answer to this call; `encrypted`: the call's `include` names
    `reasoning.encrypted_content`."""
    request_id = str(chat.get("id") or "")
    choices = chat.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    found = choice.get("message")
    message: Json = found if isinstance(found, dict) else {}
    status, incomplete = finished(str(choice.get("finish_reason") or ""))
    out = response_object(
        request, response_id(request_id), str(chat.get("model") or ""),
        int(chat.get("created") or 0), status,
    )  # fmt: skip
    out["incomplete_details"] = incomplete
    namespaces = namespaced_functions(request)
    out["output"] = output_items(message, request_id, namespaces, encrypted=encrypted)
    usage = Usage.from_openai(chat.get("usage"))
    out["usage"] = responses_usage(usage) if usage is not None else None
    if "momor_metadata" in chat:
        out["momor_metadata"] = chat["momor_metadata"]
    return out


def output_items(
    message: Json,
    request_id: str,
    namespaces: Mapping[str, tuple[str, str]],
    *,
    encrypted: bool,
) -> list[Json]:
    """The answer's output items: its reasoning, its message, its function calls (the
    functions of namespace tools by the names `namespaces` maps)."""
    items: list[Json] = []
    reasoning = reasoning_item(
        item_id("rs", request_id, 0), message.get("reasoning"),
        message.get("reasoning_details"), encrypted=encrypted,
    )  # fmt: skip
    if reasoning is not None:
        items.append(reasoning)
    parts = content_parts(message.get("content"), message.get("refusal"))
    if parts:
        items.append(message_item(item_id("msg", request_id, len(items)), parts, "completed"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name = str(function.get("name") or "")
            items.append(
                function_call_item(
                    item_id("fc", request_id, len(items)), str(call.get("id") or ""),
                    namespaces.get(name, (None, name)), str(function.get("arguments") or ""),
                    "completed",
                )
            )  # fmt: skip
    return items


def reasoning_item(rid: str, text: object, details: object, *, encrypted: bool) -> Json | None:
    """A reasoning item of this text and these `reasoning_details`; None for neither."""
    entries = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    if not (isinstance(text, str) and text) and not entries:
        return None
    summary = [summary_part(text)] if isinstance(text, str) and text else []
    item: Json = {"id": rid, "type": "reasoning", "summary": summary}
    if encrypted and entries:
        item["encrypted_content"] = momor_reasoning(entries)
    return item


def summary_part(text: str) -> Json:
    return {"type": "summary_text", "text": text}


def content_parts(content: object, refusal: object) -> list[Json]:
    text = _text_of(content)
    parts = [output_text(text)] if text else []
    if isinstance(refusal, str) and refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    return parts


def output_text(text: str) -> Json:
    return {"type": "output_text", "annotations": [], "text": text}


def message_item(rid: str, content: list[Json], status: str) -> Json:
    return {"id": rid, "type": "message", "status": status, "content": content, "role": "assistant"}


def function_call_item(
    rid: str, call_id: str, name: tuple[str | None, str], arguments: str, status: str
) -> Json:
    """A function call item; `name`: the function's namespace (None for none) and name."""
    namespace, function = name
    item = {
        "id": rid,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": function,
    }
    return item if namespace is None else {**item, "namespace": namespace}


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or "") for p in content if isinstance(p, dict) and "text" in p
        )
    return ""
