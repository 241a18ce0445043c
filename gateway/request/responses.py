"""A Responses call (`POST /v1/responses`) read once: refused where it asks Momor to keep state,
its routing fields and tags read as a chat call's are (`gateway.request.call.parse_call`, on the
Chat Completions request it translates into: `gateway.providers.responses.to_chat`), and the
body kept as OpenAI's own API takes it (`gateway.providers.responses.native`).

Momor keeps no responses, so the API is stateless: `store` goes as false whatever the call says
(the answer says `store: false`), and what needs a response kept is refused with a 400:
`previous_response_id` (OpenAI's own refusal for an id it does not hold,
`previous_response_not_found`), `conversation`, `background`, and `item_reference` items.
Momor's routing fields (`model`, `models`, `provider`, `session_id`) may ride in the body; they
are read by Momor and never sent on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

from billing.calls.records import Api
from gateway.providers.responses.native import native_request
from gateway.providers.responses.to_chat import Unreadable, chat_request_of
from gateway.providers.responses.wire import ResponsesRequest
from gateway.request.call import ChatCall, parse_call
from gateway.request.errors import GatewayError, excerpt, invalid_value
from gateway.request.options import ROUTING_FIELDS

ENCRYPTED_REASONING = "reasoning.encrypted_content"


@dataclass(frozen=True, slots=True)
class ResponsesCall(ChatCall):
    """A Responses call. `request` (the Chat Completions request it translates into) goes to
    every offering whose API does not speak Responses; OpenAI's (and Azure's) are sent
    `native`."""

    native: ResponsesRequest
    """The body without Momor's fields, `store` false and Momor's reasoning items left out
    (`model` is written per offering)."""
    openai_only: str
    """What of the call only OpenAI's own API carries (hosted tools...): then OpenAI's own
    offerings alone serve it. Empty when any offering can."""
    encrypted: bool
    """The call's `include` names `reasoning.encrypted_content`."""
    api: ClassVar[Api] = "responses"


def parse_responses_call(
    body: dict[str, Any], raw: bytes, places: frozenset[str], headers: Mapping[str, str]
) -> ResponsesCall:
    """A `POST /v1/responses` body; raises GatewayError(400) for the first thing unreadable.
    A stream always carries its usage (`response.completed` holds it)."""
    _stateless(body)
    try:
        translated = chat_request_of(body)
    except Unreadable as exc:
        raise invalid_value(str(exc), exc.param) from None
    routing = {name: body[name] for name in ROUTING_FIELDS if name in body}
    chat = parse_call({**translated.request, **routing}, raw, places, headers)
    options = replace(chat.options, include_usage=True) if chat.options.stream else chat.options
    include = body.get("include")
    native = {name: value for name, value in body.items() if name not in ROUTING_FIELDS}
    return ResponsesCall(
        options,
        chat.tags,
        chat.size,
        chat.request,
        native=cast(ResponsesRequest, native_request(native)),
        openai_only=translated.openai_only,
        encrypted=isinstance(include, list) and ENCRYPTED_REASONING in include,
    )


def _stateless(body: dict[str, Any]) -> None:
    """Refuse what needs a response Momor would have kept."""
    previous = body.get("previous_response_id")
    if previous is not None:
        raise GatewayError(
            400,
            f"Previous response with id '{excerpt(str(previous))}' not found. Momor keeps no "
            "responses (store is false): send the conversation's items in 'input'.",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    if body.get("conversation") is not None:
        raise invalid_value(
            "Momor keeps no conversations (store is false): send the conversation's items in "
            "'input' instead.",
            "conversation",
        )
    if body.get("background") is True:
        raise invalid_value(
            "Momor keeps no responses (store is false), so none runs in the background: "
            "leave 'background' out.",
            "background",
        )


def openai_alone(reason: str) -> GatewayError:
    """The refusal of a call that only OpenAI's own offerings can serve, when none is among
    its candidates."""
    return invalid_value(
        f"The call holds {reason}, which only OpenAI's own API carries, and none of the models "
        "it names is offered on OpenAI's own API: name a model offered there (an openai/ "
        "model), or leave them out to call this model.",
        "tools" if reason.startswith("hosted tools") else None,
    )
