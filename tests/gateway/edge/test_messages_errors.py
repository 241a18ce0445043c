"""Every refusal of POST /v1/messages in Anthropic's error shape and with Anthropic's status, over
HTTP, read by Anthropic's SDK as the error class it raises for that status: a bad body (400), a
bad key (401), insufficient credits (402 billing_error), an unknown model (404), a rate limit
(429), a body too large (413, from the body guard, before it is read), every offering failing
(529 overloaded_error); the key read from x-api-key or Authorization."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import httpx
import pytest

from tests.conftest import make_key, make_org
from tests.gateway.calls import fail_everywhere, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.edge.messages_world import (
    GPT5_ID,
    HI,
    claude,  # noqa: F401 - autouse
    client,
    error_of,
    post,
)
from tests.gateway.edge.test_checks import LIMIT, raw_exchange
from tests.rate_window import fresh_rate_window

ASK: dict[str, Any] = {"model": GPT5_ID, "max_tokens": 100, "messages": HI}


def sdk_error(caught: pytest.ExceptionInfo[anthropic.APIStatusError], kind: str) -> str:
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error", body
    assert body["error"]["type"] == kind
    message: str = body["error"]["message"]
    return message


def test_an_unreadable_body_is_a_400(world: World) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(world).messages.create(model=GPT5_ID, max_tokens=0, messages=HI)
    message = sdk_error(caught, "invalid_request_error")
    assert message == "max_tokens: Input should be a whole number greater than or equal to 1"
    assert world.fake.requests() == []


def test_a_body_that_is_not_json_is_a_400(world: World) -> None:
    response = httpx.post(
        world.url + "/v1/messages",
        content=b"{",
        headers={"x-api-key": world.key, "content-type": "application/json"},
    )
    error_of(response, 400, "invalid_request_error")


def test_a_bad_key_is_a_401(world: World) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client(world, key="sk-momor-not-a-key").messages.create(**ASK)
    sdk_error(caught, "authentication_error")


def test_no_key_is_a_401_in_the_same_shape(world: World) -> None:
    response = httpx.post(world.url + "/v1/messages", json=ASK)
    error_of(response, 401, "authentication_error")


def test_a_bearer_key_is_taken(world: World) -> None:
    sdk = anthropic.Anthropic(base_url=world.url, auth_token=world.key, max_retries=0)
    assert sdk.messages.create(**ASK).content


def test_insufficient_credits_are_a_402_billing_error(world: World) -> None:
    poor = make_org("poor", credits=Decimal("0.000001"))
    key, _ = make_key(poor, name="poor")
    with pytest.raises(anthropic.APIStatusError) as caught:
        client(world, key=key).messages.create(**ASK)
    assert caught.value.status_code == 402
    assert sdk_error(caught, "billing_error").startswith("Insufficient credits")
    assert world.fake.requests() == []


def test_an_unknown_model_is_a_404(world: World) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        client(world).messages.create(**{**ASK, "model": "nobody/nothing"})
    assert sdk_error(caught, "not_found_error") == (
        "No configured model answers to nobody/nothing."
    )


def test_past_the_keys_rate_limit_is_a_429(world: World) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="slow", rate_limit=1)
    client(world, key=key).messages.create(**ASK)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client(world, key=key).messages.create(**ASK)
    sdk_error(caught, "rate_limit_error")
    assert int(caught.value.response.headers["retry-after"]) >= 1


def test_a_body_over_the_limit_is_a_413_before_it_is_read(world: World) -> None:
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        head = (
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), LIMIT + 1)
        )
        answer = raw_exchange(world.url, head)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        body = answer.partition(b"\r\n\r\n")[2]
        assert body == (
            b'{"type":"error","error":{"type":"request_too_large",'
            b'"message":"The body is larger than 30 MiB."}}'
        )


def test_every_offering_failing_is_a_529_overloaded_error(world: World) -> None:
    fail_everywhere(world.fake)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client(world).messages.create(**ASK)
    assert caught.value.status_code == 529
    sdk_error(caught, "overloaded_error")


def test_a_refusal_carries_momors_request_id(world: World) -> None:
    response = post(world, {"model": GPT5_ID, "messages": HI})
    assert error_of(response, 400, "invalid_request_error") == "max_tokens: Field required"
    assert len(response.headers["x-momor-request-id"]) == 32
