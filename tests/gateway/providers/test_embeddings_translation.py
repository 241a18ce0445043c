"""The embeddings translation, pure: OpenAI's embeddings call as each provider's API takes it
(URL, headers, body, the calls it cannot carry), and each API's answer read back as vectors in
the inputs' order with the provider's token count."""

from __future__ import annotations

import base64
import struct
from typing import Any, cast

import orjson
import pytest

from gateway.providers import REGISTRY
from gateway.providers.anthropic import AnthropicAdapter
from gateway.providers.contract import (
    CannotCarry,
    EmbeddingRequest,
    Embeddings,
    Target,
    embedding_inputs,
    embedding_texts,
)
from gateway.providers.gemini import GeminiAdapter
from gateway.providers.openai import (
    AzureAdapter,
    CompatibleAdapter,
    DeepInfraAdapter,
    MistralAdapter,
    OpenAIOnMomorKey,
)
from gateway.providers.vertex import VertexAdapter

OPENAI = OpenAIOnMomorKey()
AZURE = AzureAdapter()
MISTRAL = MistralAdapter()
DEEPINFRA = DeepInfraAdapter()
COMPATIBLE = CompatibleAdapter()
GEMINI = GeminiAdapter()
VERTEX = VertexAdapter()
ASKED: EmbeddingRequest = {
    "input": ["The food was delicious", "and the waiter..."],
    "model": "openai/text-embedding-3-small",
    "dimensions": 4,
    "encoding_format": "base64",
    "user": "user-1",
}


def target(upstream_id: str = "text-embedding-3-small", **fields: Any) -> Target:
    return Target(
        fields.pop("base_url", "https://up.test/v1"),
        "secret-1",
        "openai/text-embedding-3-small",
        upstream_id,
        **fields,
    )


def sent(request: bytes) -> Any:
    return orjson.loads(request)


def float32(*values: float) -> list[float]:
    """The values as float32 holds them, read back as Python floats."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def packed(*values: float) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def answer(*items: Any, usage: Any = None) -> bytes:
    body: dict[str, Any] = {"object": "list", "data": list(items), "model": "m"}
    if usage is not None:
        body["usage"] = usage
    return orjson.dumps(body)


def item(index: int, embedding: Any) -> dict[str, Any]:
    return {"object": "embedding", "index": index, "embedding": embedding}


# Which adapters serve embeddings


def test_every_api_but_anthropics_serves_embeddings() -> None:
    serving = {api for api, adapter in REGISTRY.items() if adapter.embeds}

    assert serving == {
        "openai",
        "azure",
        "mistral",
        "deepinfra",
        "openai_compatible",
        "gemini",
        "vertex",
    }


def test_an_api_without_embeddings_carries_none() -> None:
    anthropic = AnthropicAdapter()

    assert anthropic.embeds is False
    with pytest.raises(CannotCarry, match="serves no embeddings"):
        anthropic.prepare_embeddings(ASKED, target())
    with pytest.raises(CannotCarry, match="serves no embeddings"):
        anthropic.embeddings(answer(item(0, [1.0])))


# The inputs, one by one


@pytest.mark.parametrize(
    ("value", "inputs"),
    [
        ("one text", ["one text"]),
        (["a", "b"], ["a", "b"]),
        ([1, 2, 3], [[1, 2, 3]]),
        ([[1, 2], [3]], [[1, 2], [3]]),
        ([], []),
        (None, []),
    ],
)
def test_the_inputs_are_read_one_by_one(value: Any, inputs: list[Any]) -> None:
    assert embedding_inputs({"input": value}) == inputs


@pytest.mark.parametrize("value", [3, {"text": "a"}, ["a", 1], [[1], "a"], [[1, "2"]], [True]])
def test_an_input_of_no_documented_shape_cannot_be_carried(value: Any) -> None:
    with pytest.raises(CannotCarry, match="'input' must be"):
        embedding_inputs({"input": value})


@pytest.mark.parametrize("value", [[1, 2], [[1], [2]]])
def test_token_arrays_are_no_texts(value: Any) -> None:
    with pytest.raises(CannotCarry, match="not token arrays"):
        embedding_texts({"input": value})


def test_no_input_is_no_text_to_embed() -> None:
    with pytest.raises(CannotCarry, match="no input"):
        embedding_texts({"input": []})


# The OpenAI family: the request


def test_openai_is_sent_the_call_as_written_but_for_the_model() -> None:
    extra = cast(EmbeddingRequest, {**ASKED, "extra": 1})  # a field the contract names not
    prepared = OPENAI.prepare_embeddings(extra, target())

    assert prepared.url == "https://up.test/v1/embeddings"
    assert prepared.headers == {
        "authorization": "Bearer secret-1",
        "content-type": "application/json",
    }
    assert sent(prepared.body) == {**ASKED, "model": "text-embedding-3-small", "extra": 1}


def test_openai_is_sent_token_arrays_as_written() -> None:
    prepared = OPENAI.prepare_embeddings({"input": [[1, 2], [3]]}, target())

    assert sent(prepared.body) == {"input": [[1, 2], [3]], "model": "text-embedding-3-small"}


def test_azure_is_sent_the_deployment_on_its_v1_api_with_the_key_in_api_key() -> None:
    base = "https://momor.openai.azure.com/openai/v1"
    prepared = AZURE.prepare_embeddings(ASKED, target("embed-deployment", base_url=base))

    assert prepared.url == f"{base}/embeddings"
    assert prepared.headers == {"api-key": "secret-1", "content-type": "application/json"}
    assert sent(prepared.body) == {**ASKED, "model": "embed-deployment"}


@pytest.mark.parametrize("adapter", [DEEPINFRA, COMPATIBLE], ids=["deepinfra", "compatible"])
def test_deepinfra_and_compatible_servers_are_asked_for_floats(adapter: Any) -> None:
    prepared = adapter.prepare_embeddings(ASKED, target("BAAI/bge-m3"))

    assert prepared.url == "https://up.test/v1/embeddings"
    assert prepared.headers["authorization"] == "Bearer secret-1"
    body = sent(prepared.body)
    assert "encoding_format" not in body
    assert body == {
        "input": ASKED["input"],
        "model": "BAAI/bge-m3",
        "dimensions": 4,
        "user": "user-1",
    }


def test_mistral_is_sent_its_own_fields_alone() -> None:
    prepared = MISTRAL.prepare_embeddings(ASKED, target("codestral-embed"))

    assert prepared.url == "https://up.test/v1/embeddings"
    assert prepared.headers["authorization"] == "Bearer secret-1"
    assert sent(prepared.body) == {
        "model": "codestral-embed",
        "input": ASKED["input"],
        "output_dimension": 4,
    }


def test_mistral_is_sent_no_dimensions_where_the_call_asks_none() -> None:
    prepared = MISTRAL.prepare_embeddings({"input": "one"}, target("mistral-embed"))

    assert sent(prepared.body) == {"model": "mistral-embed", "input": "one"}


@pytest.mark.parametrize("value", [[1, 2, 3], [[1, 2], [3]]])
def test_mistral_cannot_carry_token_arrays(value: Any) -> None:
    with pytest.raises(CannotCarry, match="token arrays"):
        MISTRAL.prepare_embeddings({"input": value}, target("mistral-embed"))


# The OpenAI family: the answer


@pytest.mark.parametrize("adapter", [OPENAI, AZURE, MISTRAL, DEEPINFRA, COMPATIBLE])
def test_the_vectors_are_put_back_in_index_order(adapter: Any) -> None:
    data = answer(item(2, [2.5]), item(0, [0.5, 1]), item(1, [-1.5]), usage={"prompt_tokens": 7})

    assert adapter.embeddings(data) == Embeddings([[0.5, 1.0], [-1.5], [2.5]], 7)


def test_a_base64_vector_is_decoded_to_its_float32_values() -> None:
    values = (0.1, -0.333, 1e-7, 12345.678, 0.0)
    data = answer(item(1, packed(*values)), item(0, packed(-2.0)), usage={"prompt_tokens": 2})

    read = OPENAI.embeddings(data)

    assert read.vectors == [[-2.0], float32(*values)]
    assert read.vectors[1] != list(values)  # float32, not the doubles that were packed
    assert read.prompt_tokens == 2


def test_an_item_without_an_index_stands_where_it_is() -> None:
    data = answer({"embedding": [1.0]}, {"embedding": [2.0]})

    assert COMPATIBLE.embeddings(data).vectors == [[1.0], [2.0]]


@pytest.mark.parametrize("usage", [None, {}, {"total_tokens": 3}, {"prompt_tokens": None}])
def test_an_answer_without_a_prompt_count_counts_none(usage: Any) -> None:
    data = answer(item(0, [1.0]), usage=usage)

    assert OPENAI.embeddings(data).prompt_tokens is None


def test_a_prompt_count_is_read_as_momor_bills_it() -> None:
    data = answer(item(0, [1.0]), usage={"prompt_tokens": 2.5})

    assert OPENAI.embeddings(data).prompt_tokens == 3


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        orjson.dumps({"object": "list"}),
        answer(),
        answer("not an object"),
        answer(item(0, [1.0]), item(0, [2.0])),
        answer(item(0, [1.0]), item(2, [2.0])),
        answer(item(-1, [1.0])),
        answer(item(True, [1.0])),
        answer(item(0, [])),
        answer(item(0, None)),
        answer(item(0, [1.0, "2"])),
        answer(item(0, [True])),
        answer(item(0, "not base64!")),
        answer(item(0, base64.b64encode(b"\x00\x00\x80").decode())),
        answer(item(0, packed(float("nan")))),
        answer(item(0, packed(1.0, float("inf")))),
    ],
)
def test_a_malformed_answer_cannot_be_read(data: bytes) -> None:
    with pytest.raises(ValueError):
        OPENAI.embeddings(data)


# Gemini: batchEmbedContents


def test_gemini_is_sent_one_request_per_input_in_order() -> None:
    prepared = GEMINI.prepare_embeddings(ASKED, target("gemini-embedding-001"))

    assert prepared.url == "https://up.test/v1/models/gemini-embedding-001:batchEmbedContents"
    assert prepared.headers == {"x-goog-api-key": "secret-1", "content-type": "application/json"}
    assert sent(prepared.body) == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": "The food was delicious"}]},
                "outputDimensionality": 4,
            },
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": "and the waiter..."}]},
                "outputDimensionality": 4,
            },
        ]
    }


def test_gemini_is_sent_a_single_text_as_a_batch_of_one_without_dimensions() -> None:
    prepared = GEMINI.prepare_embeddings({"input": "hi"}, target("gemini-embedding-001"))

    assert sent(prepared.body) == {
        "requests": [
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "hi"}]}}
        ]
    }


@pytest.mark.parametrize("adapter", [GEMINI, VERTEX], ids=["gemini", "vertex"])
@pytest.mark.parametrize("value", [[1, 2, 3], [[1, 2], [3]]])
def test_google_cannot_carry_token_arrays(adapter: Any, value: Any) -> None:
    with pytest.raises(CannotCarry, match="token arrays"):
        adapter.prepare_embeddings({"input": value}, target("text-embedding-005", project="p"))


def test_gemini_carries_a_hundred_inputs_and_no_more() -> None:
    gemini = target("gemini-embedding-001")

    prepared = GEMINI.prepare_embeddings({"input": ["x"] * 100}, gemini)
    assert len(sent(prepared.body)["requests"]) == 100
    with pytest.raises(CannotCarry, match="at most 100"):
        GEMINI.prepare_embeddings({"input": ["x"] * 101}, gemini)


def test_geminis_vectors_come_back_in_order_without_a_count() -> None:
    data = orjson.dumps({"embeddings": [{"values": [0.25, -1]}, {"values": [3]}]})

    assert GEMINI.embeddings(data) == Embeddings([[0.25, -1.0], [3.0]], None)


def test_a_gemini_count_is_read_should_one_be_sent() -> None:
    data = orjson.dumps(
        {"embeddings": [{"values": [1.0]}], "usageMetadata": {"promptTokenCount": 5}}
    )

    assert GEMINI.embeddings(data).prompt_tokens == 5


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"embeddings": []},
        {"embeddings": {"values": [1.0]}},
        {"embeddings": [{"values": [1.0]}, {}]},
        {"embeddings": [{"values": []}]},
        {"embeddings": ["1.0"]},
    ],
)
def test_a_malformed_gemini_answer_cannot_be_read(body: Any) -> None:
    with pytest.raises(ValueError):
        GEMINI.embeddings(orjson.dumps(body))


# Vertex: predict


def vertex_target(upstream_id: str = "text-embedding-005", region: str = "") -> Target:
    return target(
        upstream_id,
        base_url="https://aiplatform.test/v1",
        project="momor-test",
        region=region,
    )


def test_vertex_is_sent_one_instance_per_input_to_predict() -> None:
    prepared = VERTEX.prepare_embeddings(ASKED, vertex_target(region="us-central1"))

    assert prepared.url == (
        "https://aiplatform.test/v1/projects/momor-test/locations/us-central1"
        "/publishers/google/models/text-embedding-005:predict"
    )
    assert prepared.headers == {
        "authorization": "Bearer secret-1",
        "content-type": "application/json",
    }
    assert sent(prepared.body) == {
        "instances": [{"content": "The food was delicious"}, {"content": "and the waiter..."}],
        "parameters": {"outputDimensionality": 4},
    }


def test_vertex_is_sent_no_parameters_where_the_call_asks_no_dimensions() -> None:
    prepared = VERTEX.prepare_embeddings({"input": "hi"}, vertex_target("gemini-embedding-001"))

    assert prepared.url.endswith(
        "/locations/global/publishers/google/models/gemini-embedding-001:predict"
    )
    assert sent(prepared.body) == {"instances": [{"content": "hi"}]}


def test_vertex_carries_one_input_alone_to_gemini_embedding_001() -> None:
    with pytest.raises(CannotCarry, match="at most 1 inputs"):
        VERTEX.prepare_embeddings({"input": ["a", "b"]}, vertex_target("gemini-embedding-001"))
    two = VERTEX.prepare_embeddings({"input": ["a", "b"]}, vertex_target("text-embedding-005"))
    assert len(sent(two.body)["instances"]) == 2


def test_vertex_carries_250_inputs_and_no_more() -> None:
    prepared = VERTEX.prepare_embeddings({"input": ["x"] * 250}, vertex_target())
    assert len(sent(prepared.body)["instances"]) == 250
    with pytest.raises(CannotCarry, match="at most 250"):
        VERTEX.prepare_embeddings({"input": ["x"] * 251}, vertex_target())


def prediction(values: list[float], count: Any = None) -> dict[str, Any]:
    embeddings: dict[str, Any] = {"values": values}
    if count is not None:
        embeddings["statistics"] = {"truncated": False, "token_count": count}
    return {"embeddings": embeddings}


def test_vertexs_vectors_come_back_in_order_with_their_counts_added_up() -> None:
    data = orjson.dumps({"predictions": [prediction([1, 2], 6), prediction([3], 4.0)]})

    assert VERTEX.embeddings(data) == Embeddings([[1.0, 2.0], [3.0]], 10)


def test_vertex_counts_none_unless_every_instance_is_counted() -> None:
    data = orjson.dumps({"predictions": [prediction([1.0], 6), prediction([2.0])]})

    assert VERTEX.embeddings(data) == Embeddings([[1.0], [2.0]], None)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"predictions": []},
        {"predictions": [{}]},
        {"predictions": [{"embeddings": [1.0]}]},
        {"predictions": [prediction([])]},
        {"embeddings": [{"values": [1.0]}]},
    ],
)
def test_a_malformed_vertex_answer_cannot_be_read(body: Any) -> None:
    with pytest.raises(ValueError):
        VERTEX.embeddings(orjson.dumps(body))


# Errors: each API's own failure, as for chat


def test_an_embeddings_error_is_read_as_each_api_writes_it() -> None:
    openai_error = {"error": {"message": "bad input", "type": "invalid_request_error"}}
    google_error = {"error": {"code": 400, "message": "bad input", "status": "INVALID_ARGUMENT"}}

    for adapter, body in ((OPENAI, openai_error), (GEMINI, google_error), (VERTEX, google_error)):
        failure = adapter.failure(400, orjson.dumps(body))
        assert (failure.status, failure.message, failure.moves_on) == (400, "bad input", False)
