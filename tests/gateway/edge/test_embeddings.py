"""POST /v1/embeddings over HTTP, with OpenAI's SDK as the client: routed, failed over,
recorded and billed as a chat call is, on the prompt tokens alone; its own checks refused with
OpenAI's 400; a chat model on this route a 404 saying which kind it is."""

from __future__ import annotations

import base64
import struct
from decimal import Decimal
from typing import Any

import openai
import pytest

from billing.models import Generation
from gateway.models import Model, Provider
from testkit.fake_embeddings import embedding_vector
from tests.gateway.calls import (
    error_of,
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
    wait_recorded,
)
from tests.gateway.conftest import World, offer

MODEL = "openai/text-embedding-3-small"
PATH = "/v1/embeddings"


@pytest.fixture(autouse=True)
def embedding_model(world: World) -> None:
    """Offered on OpenAI and, dearer, on Mistral: the second is tried when the first fails."""
    row = Model.objects.create(id=MODEL, kind="embedding")
    offer(row, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.02", "0")
    offer(row, Provider.objects.get(name="mistral"), "mistral-embed", "0.10", "0")
    settle()


def client(world: World) -> openai.OpenAI:
    return openai.OpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)


def test_the_sdk_gets_a_vector_per_input_in_order(world: World) -> None:
    answer = client(world).embeddings.create(model=MODEL, input=["one two", "three"])
    assert [item.index for item in answer.data] == [0, 1]
    assert [item.embedding for item in answer.data] == [
        embedding_vector("one two"),
        embedding_vector("three"),
    ]
    assert answer.model == MODEL
    assert (answer.usage.prompt_tokens, answer.usage.total_tokens) == (3, 3)
    assert tried(world.fake) == ["text-embedding-3-small"]


def test_base64_vectors_are_little_endian_float32(world: World) -> None:
    body = {"model": MODEL, "input": "one two", "encoding_format": "base64"}
    response = world.post(body, path=PATH)
    assert response.status_code == 200, response.text
    packed = base64.b64decode(response.json()["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(packed) // 4}f", packed)) == embedding_vector("one two")


def test_dimensions_and_token_arrays_go_upstream(world: World) -> None:
    answer = client(world).embeddings.create(model=MODEL, input=[[1, 2, 3]], dimensions=4)
    assert answer.data[0].embedding == embedding_vector([1, 2, 3], 4)
    sent: dict[str, Any] = world.fake.requests("text-embedding-3-small")[0]["body"]
    assert (sent["input"], sent["dimensions"], sent["model"]) == (
        [[1, 2, 3]],
        4,
        "text-embedding-3-small",
    )


def test_a_failed_offering_moves_the_call_to_the_next(world: World) -> None:
    world.fake.script("text-embedding-3-small", fail={"status": 503})
    response = world.post({"model": MODEL, "input": "one"}, path=PATH)
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "mistral"
    assert tried(world.fake) == ["text-embedding-3-small", "mistral-embed"]


def test_the_call_is_recorded_and_billed_on_its_prompt_tokens(world: World) -> None:
    response = world.post({"model": MODEL, "input": ["a b c d", "e"]}, path=PATH)
    assert response.status_code == 200, response.text
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    row = Generation.objects.get(request_id=request_id)
    assert (row.status, row.model, row.provider, row.streamed) == (
        "success",
        MODEL,
        "openai",
        False,
    )
    assert (row.prompt_tokens, row.completion_tokens) == (5, 0)
    assert row.cost == Decimal("0.02") * 5 / 1_000_000
    usage = response.json()["usage"]
    assert (usage["cost"], usage["token_count_basis"]) == (float(row.cost), "provider_native")
    assert usage["cost_details"]["upstream_inference_prompt_cost"] == float(row.cost)


@pytest.mark.parametrize(
    "body",
    [
        {"model": MODEL},
        {"model": MODEL, "input": ""},
        {"model": MODEL, "input": []},
        {"model": MODEL, "input": ["a", ""]},
        {"model": MODEL, "input": ["a", 1]},
        {"model": MODEL, "input": [[1], []]},
        {"model": MODEL, "input": ["a"] * 2049},
        {"model": MODEL, "input": "a", "dimensions": 0},
        {"model": MODEL, "input": "a", "encoding_format": "int8"},
        {"model": MODEL, "input": "a", "stream": True},
    ],
)
def test_an_unreadable_call_is_a_400_and_nothing_goes_upstream(
    world: World, body: dict[str, Any]
) -> None:
    error = error_of(world.post(body, path=PATH), 400, "invalid_value")
    assert error["type"] == "invalid_request_error"
    assert world.fake.requests() == []


def test_a_chat_model_on_the_embeddings_route_is_a_404_saying_so(world: World) -> None:
    error = error_of(
        world.post({"model": "openai/gpt-5", "input": "a"}, path=PATH), 404, "model_not_found"
    )
    assert error["message"] == (
        "openai/gpt-5 is a chat model: it answers chat, Messages and Responses calls, "
        "not embeddings calls."
    )
    assert world.fake.requests() == []
