"""POST /v1/embeddings through Momor to every API that serves embeddings, over HTTP against the
fake upstream: OpenAI, Azure, Mistral, DeepInfra, an OpenAI-compatible server, the Gemini API
(`batchEmbedContents`) and Vertex (`:predict`, on a service account's token). Each call checks
the vectors (in the inputs' order, the fake's own), what the provider was sent, and the record:
its tokens (the provider's count, else Momor's estimate from the body's size), its cost (prompt
tokens at the prompt price) and the ledger's charge. Then failover as for a chat call: a call a
provider cannot carry, an answer that cannot be read or does not fit, every offering failing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest

from billing.ledger.posting import ledger_sum
from billing.models import Attempt, Generation, LedgerEntry
from billing.recording.hand_off import drain
from gateway.models import Model, Provider
from testkit.fake_embeddings import embedding_vector, packed
from tests.gateway.calls import (
    ask,
    error_of,
    fail_everywhere,
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import (
    MOMOR_UPSTREAM_KEY,
    World,
    offer,
    provider,
    service_account,
)

PATH = "/v1/embeddings"
MILLION = Decimal(1_000_000)
PROJECT = "momor-test"
TEXTS = ["the quick brown fox", "jumps over", "the lazy dog"]
WORDS = 9  # the fake counts a text's words


@dataclass(frozen=True)
class Route:
    """One embeddings API as the catalog offers it here: its provider, a model served there
    alone, its upstream id and prompt price, where Momor calls it, and whether its answer counts
    the tokens."""

    provider: str
    model: str
    upstream_id: str
    price: str
    path: str
    counts: bool = True


ROUTES = {
    "openai": Route(
        "openai", "openai/text-embedding-3-small", "text-embedding-3-small", "0.02",
        "/v1/embeddings",
    ),
    "azure": Route(
        "azure", "openai/text-embedding-3-large", "embed-large-deployment", "0.13",
        "/azure/openai/v1/embeddings",
    ),
    "mistral": Route(
        "mistral", "mistral/mistral-embed", "mistral-embed", "0.1", "/mistral/v1/embeddings"
    ),
    "deepinfra": Route(
        "deepinfra", "baai/bge-m3", "BAAI/bge-m3", "0.01", "/deepinfra/v1/openai/embeddings"
    ),
    "vllm": Route(
        "vllm", "nomic/nomic-embed-text", "nomic-embed-text", "0.005", "/vllm/v1/embeddings"
    ),
    "gemini": Route(
        "gemini", "google/gemini-embedding-001", "gemini-embedding-001", "0.15",
        "/v1beta/models/gemini-embedding-001:batchEmbedContents", counts=False,
    ),
    "vertex": Route(
        "vertex", "google/text-embedding-005", "text-embedding-005", "0.025",
        f"/vertex/v1/projects/{PROJECT}/locations/global/publishers/google/models/"
        "text-embedding-005:predict",
    ),
}  # fmt: skip


@pytest.fixture(autouse=True)
def embedding_catalog(world: World, fake_token_endpoint: str) -> None:
    """The world's providers; the Gemini API, Vertex and a vLLM server (OpenAI-compatible, on
    Momor's key) beside them; one embedding model served on each provider alone."""
    provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    provider("vllm", "openai_compatible", f"{world.fake.url}/vllm/v1")
    provider(
        "vertex", "vertex", f"{world.fake.url}/vertex/v1",
        key=service_account(fake_token_endpoint, PROJECT),
    )  # fmt: skip
    for route in ROUTES.values():
        row = Model.objects.create(id=route.model, kind="embedding")
        offer(row, Provider.objects.get(name=route.provider), route.upstream_id, route.price, "0")
    # The fake's token endpoint as a Vertex test may have left it: tokens issued, none refused.
    url = f"{world.fake.url}/_fake/tokens"
    httpx.post(url, json={"expires_in": 3599}, trust_env=False).raise_for_status()
    settle()


def embed(world: World, body: dict[str, Any]) -> tuple[httpx.Response, int]:
    """The call sent as these exact bytes, and their size (what Momor estimates from)."""
    raw = orjson.dumps(body)
    headers = {"authorization": f"Bearer {world.key}", "content-type": "application/json"}
    response = httpx.post(world.url + PATH, content=raw, headers=headers, timeout=30)
    return response, len(raw)


def usd(tokens: int, price: str | Decimal) -> Decimal:
    """What `tokens` prompt tokens cost at a price per million, to the nano-dollar."""
    return (tokens * Decimal(price) / MILLION).quantize(Decimal("0.000000001"))


def charged(world: World, response: httpx.Response) -> Generation:
    """The call's record, once its charge is in the ledger: the ledger charged what the record
    says, and the balance is the ledger's sum."""
    assert drain(timeout=30)
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    charges = LedgerEntry.objects.filter(generation=generation, kind="charge")
    assert [-c.amount for c in charges] == ([generation.cost] if generation.cost else [])
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
    return generation


def attempts(generation: Generation) -> list[tuple[str, int | None, int, Decimal]]:
    rows = Attempt.objects.filter(generation=generation).order_by("position")
    return [(a.upstream_id, a.http_status, a.prompt_tokens, a.cost) for a in rows]


def vectors(response: httpx.Response) -> list[Any]:
    data = response.json()["data"]
    assert [item["index"] for item in data] == list(range(len(data)))
    assert {item["object"] for item in data} == {"embedding"}
    return [item["embedding"] for item in data]


# What each provider is sent for TEXTS (and `dimensions`, where the call asks for it)


def openai_body(route: Route, dimensions: int | None) -> dict[str, Any]:
    sent: dict[str, Any] = {"model": route.upstream_id, "input": TEXTS}
    if dimensions is not None:
        sent["dimensions"] = dimensions
    return sent


def mistral_body(route: Route, dimensions: int | None) -> dict[str, Any]:
    sent: dict[str, Any] = {"model": route.upstream_id, "input": TEXTS}
    if dimensions is not None:
        sent["output_dimension"] = dimensions
    return sent


def gemini_body(route: Route, dimensions: int | None) -> dict[str, Any]:
    extra = {} if dimensions is None else {"outputDimensionality": dimensions}
    return {
        "requests": [
            {"model": f"models/{route.upstream_id}", "content": {"parts": [{"text": t}]}, **extra}
            for t in TEXTS
        ]
    }


def vertex_body(route: Route, dimensions: int | None) -> dict[str, Any]:
    sent: dict[str, Any] = {"instances": [{"content": t} for t in TEXTS]}
    if dimensions is not None:
        sent["parameters"] = {"outputDimensionality": dimensions}
    return sent


SENT: dict[str, Callable[[Route, int | None], dict[str, Any]]] = {
    "openai": openai_body,
    "azure": openai_body,
    "mistral": mistral_body,
    "deepinfra": openai_body,
    "vllm": openai_body,
    "gemini": gemini_body,
    "vertex": vertex_body,
}


def credential(name: str, headers: dict[str, str]) -> str:
    """The credential a provider's call carried, as its API takes it."""
    if name == "azure":
        return headers["api-key"]
    if name == "gemini":
        return headers["x-goog-api-key"]
    return headers.get("authorization", "")


def expected_credential(name: str) -> str:
    if name in ("azure", "gemini"):
        return MOMOR_UPSTREAM_KEY
    if name == "vertex":
        return "Bearer ya29.fake-"  # an access token the fake's token endpoint issued
    return f"Bearer {MOMOR_UPSTREAM_KEY}"


@pytest.mark.parametrize("name", list(ROUTES))
def test_each_provider_embeds_the_inputs_in_order_and_bills_them(world: World, name: str) -> None:
    route = ROUTES[name]
    response, size = embed(world, {"model": route.model, "input": TEXTS})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == name
    body = response.json()
    assert (body["object"], body["model"]) == ("list", route.model)
    assert vectors(response) == [embedding_vector(text) for text in TEXTS]

    (call,) = world.fake.requests()
    assert call["path"] == route.path
    assert call["body"] == SENT[name](route, None)
    assert credential(name, call["headers"]).startswith(expected_credential(name))

    # The provider's count, else Momor's estimate: about four bytes of the call's body a token.
    tokens = WORDS if route.counts else size // 4
    usage = body["usage"]
    assert (usage["prompt_tokens"], usage["total_tokens"]) == (tokens, tokens)
    basis = "provider_native" if route.counts else "gateway_estimate"
    assert usage["token_count_basis"] == basis
    generation = charged(world, response)
    assert usage["cost"] == float(generation.cost)
    assert (generation.api, generation.status, generation.model, generation.provider) == (
        "embeddings",
        "success",
        route.model,
        name,
    )
    assert (generation.prompt_tokens, generation.completion_tokens) == (tokens, 0)
    assert generation.usage_estimated is not route.counts
    assert generation.cost == usd(tokens, route.price)
    assert attempts(generation) == [(route.upstream_id, 200, tokens, generation.cost)]


@pytest.mark.parametrize("name", list(ROUTES))
def test_each_provider_is_asked_for_the_dimensions(world: World, name: str) -> None:
    route = ROUTES[name]
    response, _ = embed(world, {"model": route.model, "input": TEXTS, "dimensions": 4})
    assert response.status_code == 200, response.text
    assert vectors(response) == [embedding_vector(text, 4) for text in TEXTS]
    (call,) = world.fake.requests()
    assert call["body"] == SENT[name](route, 4)


@pytest.mark.parametrize("name", ["openai", "azure"])
def test_base64_goes_upstream_as_asked_where_the_provider_takes_it(world: World, name: str) -> None:
    route = ROUTES[name]
    body = {"model": route.model, "input": TEXTS, "encoding_format": "base64"}
    response, _ = embed(world, body)
    assert response.status_code == 200, response.text
    assert vectors(response) == [packed(embedding_vector(text)) for text in TEXTS]
    (call,) = world.fake.requests()
    assert call["body"]["encoding_format"] == "base64"


@pytest.mark.parametrize("name", ["deepinfra", "vllm", "mistral", "gemini", "vertex"])
def test_base64_from_a_provider_asked_for_floats_is_those_floats_encoded(
    world: World, name: str
) -> None:
    route = ROUTES[name]
    body = {"model": route.model, "input": TEXTS, "encoding_format": "base64"}
    response, _ = embed(world, body)
    assert response.status_code == 200, response.text
    assert vectors(response) == [packed(embedding_vector(text)) for text in TEXTS]
    (call,) = world.fake.requests()
    assert call["body"] == SENT[name](route, None)  # no encoding_format: floats come back


def test_token_arrays_go_as_written_to_the_openai_family(world: World) -> None:
    for name in ("openai", "azure", "deepinfra", "vllm"):
        route = ROUTES[name]
        response, _ = embed(world, {"model": route.model, "input": [[1, 2, 3], [4, 5]]})
        assert response.status_code == 200, response.text
        assert vectors(response) == [embedding_vector([1, 2, 3]), embedding_vector([4, 5])]
        assert response.json()["usage"]["prompt_tokens"] == 5
    sent = [call["body"]["input"] for call in world.fake.requests()]
    assert sent == [[[1, 2, 3], [4, 5]]] * 4


@pytest.mark.parametrize("name", ["openai", "mistral", "vertex"])
def test_an_answer_without_a_count_is_billed_at_the_estimate(world: World, name: str) -> None:
    route = ROUTES[name]
    world.fake.script(route.upstream_id, no_usage=True)
    response, size = embed(world, {"model": route.model, "input": TEXTS})
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["prompt_tokens"] == size // 4
    generation = charged(world, response)
    assert (generation.prompt_tokens, generation.usage_estimated) == (size // 4, True)
    assert generation.cost == usd(size // 4, route.price)


def test_a_gemini_answer_that_counts_its_tokens_is_billed_on_them(world: World) -> None:
    route = ROUTES["gemini"]
    world.fake.script(route.upstream_id, usage={"promptTokenCount": 11})
    response, _ = embed(world, {"model": route.model, "input": TEXTS})
    assert response.status_code == 200, response.text
    generation = charged(world, response)
    assert (generation.prompt_tokens, generation.usage_estimated) == (11, False)
    assert generation.cost == usd(11, route.price)


def test_vectors_answered_out_of_order_go_back_in_the_inputs_order(world: World) -> None:
    route = ROUTES["openai"]
    data = [
        {"object": "embedding", "index": index, "embedding": embedding_vector(TEXTS[index])}
        for index in (2, 0, 1)
    ]
    usage = {"prompt_tokens": WORDS, "total_tokens": WORDS}
    world.fake.script(route.upstream_id, response={"object": "list", "data": data, "usage": usage})
    response, _ = embed(world, {"model": route.model, "input": TEXTS})
    assert response.status_code == 200, response.text
    assert vectors(response) == [embedding_vector(text) for text in TEXTS]


# Failover, as for a chat call


def two_offerings(first: str, second: str) -> tuple[Route, Route]:
    """A model offered on `first`'s provider and, dearer, on `second`'s (under their upstream
    ids): the second is tried when the first fails or cannot carry the call."""
    row = Model.objects.create(id="test/two-offerings", kind="embedding")
    a, b = ROUTES[first], ROUTES[second]
    offer(row, Provider.objects.get(name=a.provider), a.upstream_id, "0.01", "0")
    offer(row, Provider.objects.get(name=b.provider), b.upstream_id, "0.02", "0")
    settle()
    return a, b


@pytest.mark.parametrize("first", ["gemini", "vertex", "mistral"])
def test_token_arrays_move_from_a_text_only_provider_to_one_that_carries_them(
    world: World, first: str
) -> None:
    two_offerings(first, "openai")
    text, _ = embed(world, {"model": "test/two-offerings", "input": "one two"})
    assert text.headers["x-momor-provider"] == first  # the cheaper serves text
    world.fake.reset()

    response, _ = embed(world, {"model": "test/two-offerings", "input": [[7, 8, 9]]})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    assert vectors(response) == [embedding_vector([7, 8, 9])]
    assert tried(world.fake) == ["text-embedding-3-small"]  # the first was never called
    generation = charged(world, response)
    assert generation.cost == usd(3, "0.02")
    uncarried = ROUTES[first].upstream_id
    assert attempts(generation) == [
        (uncarried, None, 0, Decimal(0)),
        ("text-embedding-3-small", 200, 3, usd(3, "0.02")),
    ]
    assert generation.attempts.get(upstream_id=uncarried).error == (
        "cannot carry the call: this provider embeds text, not token arrays"
    )


@pytest.mark.parametrize("name", ["gemini", "vertex", "mistral"])
def test_token_arrays_no_offering_can_carry_are_a_422(world: World, name: str) -> None:
    response, _ = embed(world, {"model": ROUTES[name].model, "input": [1, 2, 3]})
    error = error_of(response, 422, "unsupported_parameter")
    assert error["message"] == (
        "Models matched, and none of them could carry the call. "
        "(this provider embeds text, not token arrays)"
    )
    assert world.fake.requests() == []


def test_more_inputs_than_a_gemini_batch_move_to_the_next_offering(world: World) -> None:
    two_offerings("gemini", "openai")
    texts = [f"text {i}" for i in range(101)]
    response, _ = embed(world, {"model": "test/two-offerings", "input": texts})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "openai"
    assert vectors(response)[100] == embedding_vector("text 100")
    assert tried(world.fake) == ["text-embedding-3-small"]


def test_more_than_one_input_to_gemini_embedding_on_vertex_moves_on(world: World) -> None:
    row = Model.objects.create(id="test/gemini-embedding", kind="embedding")
    offer(row, Provider.objects.get(name="vertex"), "gemini-embedding-001", "0.1", "0")
    offer(row, Provider.objects.get(name="gemini"), "gemini-embedding-001", "0.15", "0")
    settle()
    one, _ = embed(world, {"model": "test/gemini-embedding", "input": "one"})
    assert one.headers["x-momor-provider"] == "vertex"
    two, _ = embed(world, {"model": "test/gemini-embedding", "input": ["one", "two"]})
    assert two.status_code == 200, two.text
    assert two.headers["x-momor-provider"] == "gemini"
    assert vectors(two) == [embedding_vector("one"), embedding_vector("two")]


@pytest.mark.parametrize(
    "script",
    [
        {"raw_body": "bm90IGFuIGFuc3dlcg=="},  # b"not an answer"
        {"response": {"object": "list", "data": "nothing"}},
        # one vector for three inputs
        {"response": {"data": [{"index": 0, "embedding": [0.5, 0.25]}]}},
    ],
    ids=["not-json", "no-vectors", "too-few-vectors"],
)
def test_an_answer_that_is_unreadable_or_unfit_moves_on_and_is_billed_at_the_estimate(
    world: World, script: dict[str, Any]
) -> None:
    first, second = two_offerings("openai", "azure")
    world.fake.script(first.upstream_id, **script)
    response, size = embed(world, {"model": "test/two-offerings", "input": TEXTS})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "azure"
    assert vectors(response) == [embedding_vector(text) for text in TEXTS]
    assert tried(world.fake) == [first.upstream_id, second.upstream_id]

    generation = charged(world, response)
    # The provider spent its tokens on the answer Momor could not use: billed at the estimate.
    rejected, served = usd(size // 4, "0.01"), usd(WORDS, "0.02")
    assert attempts(generation) == [
        (first.upstream_id, 502, size // 4, rejected),
        (second.upstream_id, 200, WORDS, served),
    ]
    assert generation.cost == rejected + served
    assert generation.prompt_tokens == WORDS


def test_vectors_without_the_dimensions_asked_move_on(world: World) -> None:
    first, _ = two_offerings("openai", "azure")
    world.fake.script(first.upstream_id, response={"data": [{"embedding": [0.5] * 3}]})
    response, _ = embed(world, {"model": "test/two-offerings", "input": "a", "dimensions": 4})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "azure"
    assert vectors(response) == [embedding_vector("a", 4)]


def test_every_offering_failing_answers_as_a_chat_call_does(world: World) -> None:
    two_offerings("openai", "azure")
    fail_everywhere(world.fake)
    for route in (ROUTES["openai"], ROUTES["azure"]):
        world.fake.script(route.upstream_id, fail={"status": 503})
    chat = error_of(world.post(ask()), 503, None)
    response, _ = embed(world, {"model": "test/two-offerings", "input": "a"})
    assert error_of(response, 503, None) == chat
    assert chat["type"] == "server_error"
    generation = charged(world, response)
    assert (generation.status, generation.http_status, generation.cost) == (
        "failed",
        503,
        Decimal(0),
    )
    assert [a[:2] for a in attempts(generation)] == [
        ("text-embedding-3-small", 503),
        ("embed-large-deployment", 503),
    ]


def test_a_provider_refusing_the_call_itself_is_the_answer_at_once(world: World) -> None:
    first, _ = two_offerings("openai", "azure")
    error = {"error": {"message": "bad", "type": "invalid_request_error", "code": "bad_thing"}}
    world.fake.script(first.upstream_id, fail={"status": 400, "body": error})
    response, _ = embed(world, {"model": "test/two-offerings", "input": "a"})
    assert error_of(response, 400, "bad_thing")["message"] == "bad"
    assert tried(world.fake) == [first.upstream_id]


def test_an_embedding_model_on_the_chat_route_is_a_404_saying_so(world: World) -> None:
    response = world.post(ask(ROUTES["openai"].model))
    error = error_of(response, 404, "model_not_found")
    assert "embedding model" in error["message"]
    assert world.fake.requests() == []


def test_the_alias_route_answers_the_same(world: World) -> None:
    route = ROUTES["openai"]
    response = world.post({"model": route.model, "input": "a b"}, path="/api/v1/embeddings")
    assert response.status_code == 200, response.text
    assert vectors(response) == [embedding_vector("a b")]


def test_a_served_call_asking_for_metadata_gets_it(world: World) -> None:
    route = ROUTES["openai"]
    response = world.post(
        {"model": route.model, "input": "a"},
        path=PATH,
        headers={"X-Momor-Metadata": "enabled"},
    )
    assert response.status_code == 200, response.text
    metadata = response.json()["momor_metadata"]
    assert [c["outcome"] for c in metadata["candidates"]] == ["served"]
    assert metadata["summary"].endswith("served by openai on try 1")


def test_a_batch_longer_than_one_inputs_context_is_billed_on_all_its_tokens(
    world: World,
) -> None:
    row = Model.objects.create(id="test/short-context", kind="embedding", context_length=8)
    offer(row, Provider.objects.get(name="openai"), "short-context-embed", "0.02", "0")
    settle()
    texts = ["one two three four five"] * 3  # 5 tokens each, within the 8 of one input
    response, _ = embed(world, {"model": "test/short-context", "input": texts})
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["prompt_tokens"] == 15
    generation = charged(world, response)
    assert generation.prompt_tokens == 15
    assert (generation.cost, generation.charge_capped) == (usd(15, "0.02"), False)
