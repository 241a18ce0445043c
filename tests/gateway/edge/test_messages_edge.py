"""The Messages entry's edge, pure: where its key is read, and every refusal in Anthropic's
error shape with the status Anthropic documents for its type."""

from __future__ import annotations

import orjson
import pytest

from gateway.edge.entries import BY_PATH, MESSAGES, SHAPE_BY_PATH
from gateway.edge.messages import messages_error, messages_key
from gateway.request.errors import GatewayError


@pytest.mark.parametrize(
    ("headers", "key"),
    [
        ({b"x-api-key": b"mk-1"}, "Bearer mk-1"),
        ({b"authorization": b"Bearer mk-2"}, "Bearer mk-2"),
        ({b"x-api-key": b"mk-1", b"authorization": b"Bearer mk-2"}, "Bearer mk-1"),
        ({b"x-api-key": b"", b"authorization": b"Bearer mk-2"}, "Bearer mk-2"),
        ({}, None),
    ],
)
def test_the_key_is_x_api_key_else_authorization(
    headers: dict[bytes, bytes], key: str | None
) -> None:
    assert messages_key(headers) == key


@pytest.mark.parametrize(
    ("status", "sent", "kind"),
    [
        (400, 400, "invalid_request_error"),
        (401, 401, "authentication_error"),
        (402, 402, "billing_error"),
        (403, 403, "permission_error"),
        (404, 404, "not_found_error"),
        (405, 405, "invalid_request_error"),
        (413, 413, "request_too_large"),
        (415, 415, "invalid_request_error"),
        (422, 422, "invalid_request_error"),
        (429, 429, "rate_limit_error"),
        (500, 500, "api_error"),
        (502, 502, "api_error"),
        (503, 529, "overloaded_error"),
        (529, 529, "overloaded_error"),
    ],
)
def test_a_refusal_in_anthropics_shape(status: int, sent: int, kind: str) -> None:
    answered, body = messages_error(GatewayError(status, "Why.", code="some_code"))
    assert answered == sent
    assert orjson.loads(body) == {"type": "error", "error": {"type": kind, "message": "Why."}}


def test_the_routes_and_the_token_count_take_the_messages_shape() -> None:
    assert BY_PATH["/v1/messages"] is MESSAGES and BY_PATH["/api/v1/messages"] is MESSAGES
    assert SHAPE_BY_PATH["/v1/messages/count_tokens"] is MESSAGES
    assert "/v1/messages/count_tokens" not in BY_PATH  # no call: its own view
    assert MESSAGES.api == "messages"
