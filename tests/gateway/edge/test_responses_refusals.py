"""POST /v1/responses refused, in OpenAI's error object and statuses, over HTTP with OpenAI's SDK
where it reads them: what needs a stored response (previous_response_id with OpenAI's own 400,
conversation, background), an input Momor cannot read, and every refusal a chat call meets
(401, 402, 404, 413, 429), each recorded as a Responses call where the key was known."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.conftest import make_key, make_org
from tests.gateway.calls import (
    error_of,
    settle,
    settled_world,  # noqa: F401 - autouse
    wait_recorded,
)
from tests.gateway.conftest import World
from tests.gateway.edge.test_responses import PATH, client
from tests.rate_window import fresh_rate_window

LIMIT = 30 * 1024 * 1024


def refused_record(response: httpx.Response) -> Generation:
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    return Generation.objects.get(request_id=request_id)


def test_previous_response_id_is_openai_s_400_for_a_response_not_kept(world: World) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(world).responses.create(
            model="openai/gpt-5", input="And then?", previous_response_id="resp_abc"
        )
    error: Any = caught.value.body
    assert caught.value.status_code == 400
    assert (error["code"], error["param"], error["type"]) == (
        "previous_response_not_found", "previous_response_id", "invalid_request_error",
    )  # fmt: skip
    assert error["message"].startswith("Previous response with id 'resp_abc' not found.")
    assert world.fake.requests() == []


def test_a_refused_call_is_recorded_as_a_responses_call(world: World) -> None:
    response = world.post(
        {"model": "openai/gpt-5", "input": "x", "previous_response_id": "resp_1"}, path=PATH
    )
    error_of(response, 400, "previous_response_not_found")
    row = refused_record(response)
    assert (row.api, row.status, row.http_status) == ("responses", "refused", 400)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"conversation": "conv_1"}, "conversation"),
        ({"background": True}, "background"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"input": 3}, "input"),
        ({"tools": [{"type": "function"}]}, "tools[0].name"),
        ({"reasoning": {"effort": "enormous"}}, None),
        ({"stream": "yes"}, None),
    ],
)
def test_what_momor_cannot_serve_is_a_400_and_nothing_goes_upstream(
    world: World, body: dict[str, Any], param: str | None
) -> None:
    response = world.post({"model": "openai/gpt-5", "input": "hi", **body}, path=PATH)
    error = error_of(response, 400, "invalid_value")
    assert error["param"] == param
    assert world.fake.requests() == []


def test_a_bad_key_is_a_401(world: World) -> None:
    bad = openai.OpenAI(base_url=world.url + "/v1", api_key="sk-momor-nobody", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.responses.create(model="openai/gpt-5", input="hi")
    assert caught.value.code == "invalid_api_key"


def test_an_organization_without_credit_is_a_402(world: World) -> None:
    broke = make_org("broke", credits=Decimal(0))
    key, _ = make_key(broke, name="broke")
    settle()
    response = world.post({"model": "openai/gpt-5", "input": "hi"}, key=key, path=PATH)
    assert response.status_code == 402, response.text
    assert set(response.json()) == {"error"}
    assert refused_record(response).api == "responses"
    assert world.fake.requests() == []


def test_an_unknown_model_is_a_404(world: World) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client(world).responses.create(model="nobody/nothing", input="hi")
    assert caught.value.code == "model_not_found"


def test_a_key_past_its_rate_limit_is_a_429(world: World) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="slow", rate_limit=1)
    settle()
    body = {"model": "openai/gpt-5", "input": "hi"}
    assert world.post(body, key=key, path=PATH).status_code == 200
    response = world.post(body, key=key, path=PATH)
    error_of(response, 429, "rate_limit_exceeded")
    assert response.headers["x-ratelimit-limit"] == "1"
    assert refused_record(response).api == "responses"


def test_a_body_over_30_mib_is_a_413(world: World) -> None:
    body = b'{"model":"openai/gpt-5","input":"' + b"x" * (LIMIT + 10) + b'"}'
    headers = {"authorization": f"Bearer {world.key}", "content-type": "application/json"}
    try:
        response = httpx.post(world.url + PATH, content=body, headers=headers, timeout=30)
    except httpx.HTTPError:
        pytest.skip("the server closed before the client finished sending (allowed)")
    error_of(response, 413, "request_too_large")
    assert drain()


def test_the_models_list_names_the_responses_route_for_chat_models(world: World) -> None:
    models = {m["id"]: m for m in httpx.get(world.url + "/v1/models", timeout=10).json()["data"]}
    assert "responses" in models["openai/gpt-5"]["apis"]
