"""A Chat Completions stream (the relay's, for any offering but OpenAI's own) as the Responses
API's stream, in the order and shapes OpenAI writes its events, each with its
`sequence_number` (0, 1, 2... in the order sent):

- the first chunk: `response.created`, `response.in_progress` (the Response, `in_progress`);
- reasoning text: a `reasoning` item (`response.output_item.added`), its summary part
  (`response.reasoning_summary_part.added`), `response.reasoning_summary_text.delta` each;
  `reasoning_details` are kept for the item's `encrypted_content` where the call includes it;
- text: a `message` item, its `output_text` part (`response.content_part.added`),
  `response.output_text.delta` each;
- a tool call: a `function_call` item, `response.function_call_arguments.delta` each;
- an item ends (`...done` events, then `response.output_item.done`) when an item of another
  kind begins (text after reasoning) or the answer finishes; function calls stay open until
  it finishes, so parallel calls' fragments each reach their own item;
- `[DONE]`: `response.completed` (or `response.incomplete` for a finish on length or the
  content filter) with every item and the usage;
- an error chunk (the stream broke after it showed something): `error` and `response.failed`,
  the Response as it stood, its open items `incomplete`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.providers.contract import Json, Usage
from gateway.providers.responses.from_chat import (
    function_call_item,
    message_item,
    output_text,
    reasoning_item,
    summary_part,
)
from gateway.providers.responses.wire import (
    ResponsesRequest,
    error_code,
    failed_events,
    finished,
    item_id,
    namespaced_functions,
    response_id,
    response_object,
    responses_usage,
)


@dataclass(slots=True)
class _Item:
    """An output item under way."""

    index: int
    id: str
    kind: str
    text: list[str] = field(default_factory=list)
    details: list[Json] = field(default_factory=list)
    call_id: str = ""
    namespace: str | None = None
    name: str = ""
    summary_open: bool = False


class ChatEvents:
    """One stream's events: feed it each chunk (`chunk`), then the end (`done`)."""

    def __init__(self, request: ResponsesRequest, *, encrypted: bool) -> None:
        self.request, self.encrypted = request, encrypted
        self.namespaces = namespaced_functions(request)
        self.sequence = 0
        self.response: Json | None = None
        self.request_id = ""
        self.output: list[Json | None] = []  # each item once done, by output index
        self.text: _Item | None = None
        self.reasoning: _Item | None = None
        self.calls: dict[int, _Item] = {}
        self.finish = ""
        self.usage: Usage | None = None
        self.metadata: Json | None = None
        self.ended = False

    def chunk(self, chunk: Json) -> list[Json]:
        """The events of one chunk."""
        if self.ended:
            return []
        events = self._opened(chunk)
        error = chunk.get("error")
        if isinstance(error, dict):
            return events + self._failed(error)
        for choice in (chunk.get("choices") or ())[:1]:
            events += self._choice(choice if isinstance(choice, dict) else {})
        if isinstance(chunk.get("usage"), dict):
            self.usage = Usage.from_openai(chunk["usage"])
        if isinstance(chunk.get("momor_metadata"), dict):
            self.metadata = chunk["momor_metadata"]
        return events

    def done(self) -> list[Json]:
        """The events at the stream's end (`[DONE]`): open items done, then the Response."""
        if self.ended or self.response is None:
            return []
        self.ended = True
        events = self._close_all()
        status, incomplete = finished(self.finish)
        response = self._snapshot(status)
        response["incomplete_details"] = incomplete
        response["usage"] = responses_usage(self.usage) if self.usage is not None else None
        if self.metadata is not None:
            response["momor_metadata"] = self.metadata
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return [*events, self._event(kind, response=response)]

    # the Response

    def _opened(self, chunk: Json) -> list[Json]:
        if self.response is not None:
            return []
        self.request_id = str(chunk.get("id") or "")
        self.response = response_object(
            self.request, response_id(self.request_id), str(chunk.get("model") or ""),
            int(chunk.get("created") or 0),
        )  # fmt: skip
        return [
            self._event("response.created", response=self._snapshot("in_progress")),
            self._event("response.in_progress", response=self._snapshot("in_progress")),
        ]

    def _snapshot(self, status: str) -> Json:
        """The Response as it stands (opened by the first chunk)."""
        output = [item for item in self.output if item is not None]
        return {**(self.response or {}), "status": status, "output": output}

    def _failed(self, error: Json) -> list[Json]:
        """The stream broke: `error` and `response.failed`, with the items as they stood."""
        self.ended = True
        for item in self._open_items():
            self.output[item.index] = self._item(item, "incomplete")
        message = str(error.get("message") or "The provider failed mid-answer.")
        response = self._snapshot("in_progress")
        events = failed_events(response, self.sequence, error_code(error.get("code")), message)
        self.sequence += len(events)
        return events

    # a choice's delta

    def _choice(self, choice: Json) -> list[Json]:
        delta = choice.get("delta")
        events: list[Json] = []
        if isinstance(delta, dict):
            events += self._reasoning(delta.get("reasoning"), delta.get("reasoning_details"))
            events += self._text(delta.get("content"))
            for call in delta.get("tool_calls") or ():
                if isinstance(call, dict):
                    events += self._call(call)
        if choice.get("finish_reason"):
            self.finish = str(choice["finish_reason"])
            events += self._close_all()
        return events

    def _reasoning(self, text: object, details: object) -> list[Json]:
        has_text = isinstance(text, str) and bool(text)
        entries = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
        if not has_text and not entries:
            return []
        events = self._close_text()
        item = self.reasoning
        if item is None:
            item = self.reasoning = self._new("rs", "reasoning")
            events.append(self._added(item, {"summary": []}))
        item.details += entries
        if not isinstance(text, str) or not text:
            return events
        if not item.summary_open:
            item.summary_open = True
            events.append(self._on(item, "response.reasoning_summary_part.added", summary_index=0,
                                   part=summary_part("")))  # fmt: skip
        item.text.append(text)
        return [
            *events,
            self._on(item, "response.reasoning_summary_text.delta", summary_index=0, delta=text),
        ]

    def _text(self, content: object) -> list[Json]:
        if not isinstance(content, str) or not content:
            return []
        events = self._close_reasoning()
        item = self.text
        if item is None:
            item = self.text = self._new("msg", "message")
            message = {"status": "in_progress", "content": [], "role": "assistant"}
            events.append(self._added(item, message))
            events.append(self._on(item, "response.content_part.added", content_index=0,
                                   part=output_text("")))  # fmt: skip
        item.text.append(content)
        events.append(self._on(item, "response.output_text.delta", content_index=0,
                               delta=content, logprobs=[]))  # fmt: skip
        return events

    def _call(self, call: Json) -> list[Json]:
        index = call.get("index")
        key = index if isinstance(index, int) else len(self.calls)
        given = call.get("function")
        function: Json = given if isinstance(given, dict) else {}
        events: list[Json] = []
        item = self.calls.get(key)
        if item is None:
            events = self._close_reasoning() + self._close_text()
            item = self.calls[key] = self._new("fc", "function_call")
            item.call_id, name = str(call.get("id") or ""), str(function.get("name") or "")
            item.namespace, item.name = self.namespaces.get(name, (None, name))
            events.append(self._added(item, self._item(item, "in_progress")))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            item.text.append(arguments)
            events.append(self._on(item, "response.function_call_arguments.delta",
                                   delta=arguments))  # fmt: skip
        return events

    # items

    def _new(self, kind: str, type_: str) -> _Item:
        index = len(self.output)
        self.output.append(None)
        return _Item(index, item_id(kind, self.request_id, index), type_)

    def _added(self, item: _Item, fields: Json) -> Json:
        added = {"id": item.id, "type": item.kind, **fields}
        return self._event("response.output_item.added", output_index=item.index, item=added)

    def _open_items(self) -> list[_Item]:
        found = [i for i in (self.reasoning, self.text) if i is not None]
        return sorted([*found, *self.calls.values()], key=lambda item: item.index)

    def _close_all(self) -> list[Json]:
        events = self._close_reasoning() + self._close_text()
        for item in sorted(self.calls.values(), key=lambda i: i.index):
            arguments = "".join(item.text)
            events.append(self._on(item, "response.function_call_arguments.done",
                                   arguments=arguments, name=item.name))  # fmt: skip
            events.append(self._done(item))
        self.calls = {}
        return events

    def _close_reasoning(self) -> list[Json]:
        item, self.reasoning = self.reasoning, None
        if item is None:
            return []
        events = []
        if item.summary_open:
            text = "".join(item.text)
            events.append(self._on(item, "response.reasoning_summary_text.done",
                                   summary_index=0, text=text))  # fmt: skip
            events.append(self._on(item, "response.reasoning_summary_part.done",
                                   summary_index=0, part=summary_part(text)))  # fmt: skip
        return [*events, self._done(item)]

    def _close_text(self) -> list[Json]:
        item, self.text = self.text, None
        if item is None:
            return []
        text = "".join(item.text)
        return [
            self._on(item, "response.output_text.done", content_index=0, text=text, logprobs=[]),
            self._on(item, "response.content_part.done", content_index=0, part=output_text(text)),
            self._done(item),
        ]

    def _done(self, item: _Item) -> Json:
        done = self.output[item.index] = self._item(item, "completed")
        return self._event("response.output_item.done", output_index=item.index, item=done)

    def _item(self, item: _Item, status: str) -> Json:
        """The item as it stands."""
        text = "".join(item.text)
        if item.kind == "message":
            return message_item(item.id, [output_text(text)], status)
        if item.kind == "function_call":
            return function_call_item(
                item.id, item.call_id, (item.namespace, item.name), text, status
            )
        found = reasoning_item(item.id, text, item.details, encrypted=self.encrypted)
        return found or {"id": item.id, "type": "reasoning", "summary": []}

    # events

    def _on(self, item: _Item, kind: str, **fields: Any) -> Json:
        """An event about an item's content."""
        return self._event(kind, item_id=item.id, output_index=item.index, **fields)

    def _event(self, kind: str, **fields: Any) -> Json:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event
