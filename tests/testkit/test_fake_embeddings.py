"""The fake upstream's embeddings over real HTTP: OpenAI's `/embeddings` (OpenAI's and Azure's
paths, float and base64, dimensions, token arrays, its 400s), the Gemini API's
`batchEmbedContents` and Vertex's `predict`, the scripted failures as for chat, the official
openai SDK reading what it sends, and every adapter that serves embeddings reading the fake's
answer to what it prepares."""

from __future__ import annotations

import base64
import struct
from typing import Any

import httpx
import openai
import pytest

from gateway.providers import REGISTRY
from gateway.providers.contract import Embeddings, Target
from testkit.fake_embeddings import DEFAULT_DIMENSIONS, embedding_vector, packed
from tests.fake_upstream_fixture import FakeUpstream

TEXTS = ["The food was delicious", "and the waiter", "was kind."]
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
VERTEX_PATH = "/vertex/v1/projects/p/locations/global/publishers/google/models"


def post(fake: FakeUpstream, path: str, body: Any, **kw: Any) -> httpx.Response:
    return httpx.post(fake.url + path, json=body, trust_env=False, **kw)


def embed(fake: FakeUpstream, path: str = "/v1/embeddings", **body: Any) -> httpx.Response:
    return post(fake, path, {"model": "text-embedding-3-small", **body})


def floats(encoded: str) -> list[float]:
    raw = base64.b64decode(encoded)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def vertex_token(fake: FakeUpstream) -> str:
    form = {"grant_type": JWT_BEARER, "assertion": "a.b.c"}
    response = httpx.post(fake.url + "/token", data=form, trust_env=False)
    token: str = response.json()["access_token"]
    return token


def batch(model: str, *texts: str, **fields: Any) -> dict[str, Any]:
    return {
        "requests": [
            {"model": f"models/{model}", "content": {"parts": [{"text": t}]}, **fields}
            for t in texts
        ]
    }


# The vectors


def test_a_vector_is_the_same_for_the_same_text_and_its_start_for_fewer_dimensions() -> None:
    vector = embedding_vector("hello")

    assert len(vector) == DEFAULT_DIMENSIONS
    assert embedding_vector("hello") == vector
    assert embedding_vector("hello!") != vector
    assert embedding_vector("hello", 3) == vector[:3]
    assert embedding_vector([1, 2]) != embedding_vector([2, 1])
    assert all(-1 <= value < 1 for value in embedding_vector("x", 64))


# OpenAI's /embeddings


def test_it_embeds_each_text_in_order_as_floats_with_the_words_as_tokens(
    fake: FakeUpstream,
) -> None:
    response = embed(fake, input=TEXTS)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": embedding_vector(text)}
            for i, text in enumerate(TEXTS)
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 9, "total_tokens": 9},
    }


def test_base64_holds_the_very_floats_little_endian_float32(fake: FakeUpstream) -> None:
    response = embed(fake, input="one text", encoding_format="base64")

    (item,) = response.json()["data"]
    assert item["embedding"] == packed(embedding_vector("one text"))
    assert floats(item["embedding"]) == embedding_vector("one text")


def test_dimensions_truncate_the_vector(fake: FakeUpstream) -> None:
    response = embed(fake, input=["a"], dimensions=3)

    assert response.json()["data"][0]["embedding"] == embedding_vector("a")[:3]


def test_token_arrays_are_embedded_and_counted_by_their_tokens(fake: FakeUpstream) -> None:
    body = embed(fake, input=[[1, 2, 3], [4]]).json()

    assert [item["embedding"] for item in body["data"]] == [
        embedding_vector([1, 2, 3]),
        embedding_vector([4]),
    ]
    assert body["usage"]["prompt_tokens"] == 4
    assert embed(fake, input=[5, 6]).json()["data"][0]["embedding"] == embedding_vector([5, 6])


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/azure/openai/v1/embeddings", "text-embedding-3-small"),
        ("/azure/openai/deployments/embed-east/embeddings?api-version=2024-10-21", "embed-east"),
    ],
)
def test_it_answers_on_azures_paths(fake: FakeUpstream, path: str, model: str) -> None:
    body = {"input": "hi"} if "deployments" in path else {"input": "hi", "model": model}
    response = post(fake, path, body, headers={"api-key": "k"})

    assert response.status_code == 200
    assert response.json()["model"] == model
    (call,) = fake.requests(model)
    assert call["path"] == path.partition("?")[0]
    assert call["headers"]["api-key"] == "k"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "input"),
        ({"model": "m", "input": ""}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": ["a", 1]}, "input"),
        ({"model": "m", "input": [[1], []]}, "input"),
        ({"model": "m", "input": {"text": "a"}}, "input"),
        ({"model": "m", "input": "a", "encoding_format": "int8"}, "encoding_format"),
        ({"model": "m", "input": "a", "dimensions": 0}, "dimensions"),
        ({"input": "a"}, None),
    ],
)
def test_it_refuses_what_openai_refuses(
    fake: FakeUpstream, body: dict[str, Any], param: str | None
) -> None:
    response = post(fake, "/v1/embeddings", body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)


def test_the_openai_sdk_reads_its_answer(fake: FakeUpstream) -> None:
    client = openai.OpenAI(base_url=fake.url + "/v1", api_key="x", max_retries=0)

    with client:
        answer = client.embeddings.create(model="text-embedding-3-small", input=TEXTS[:2])

    assert [item.embedding for item in answer.data] == [embedding_vector(t) for t in TEXTS[:2]]
    assert answer.usage.prompt_tokens == 7
    (call,) = fake.requests("text-embedding-3-small")
    assert call["body"]["encoding_format"] == "base64"  # what the SDK asks by default


# Scripted failures, as for chat


def test_a_scripted_failure_fails_the_call_then_lets_it_through(fake: FakeUpstream) -> None:
    fake.script("text-embedding-3-small", fail={"status": 429}, fail_times=1)

    first, second = embed(fake, input="a"), embed(fake, input="a")

    assert first.status_code == 429
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert second.status_code == 200


def test_a_scripted_raw_body_is_sent_as_a_2xx(fake: FakeUpstream) -> None:
    fake.script("text-embedding-3-small", raw_body=base64.b64encode(b"{not json").decode())

    response = embed(fake, input="a")

    assert (response.status_code, response.content) == (200, b"{not json")


def test_usage_is_scripted_or_left_off(fake: FakeUpstream) -> None:
    fake.script("counted", usage={"prompt_tokens": 42})
    fake.script("uncounted", no_usage=True)

    assert post(fake, "/v1/embeddings", {"model": "counted", "input": "a"}).json()["usage"] == {
        "prompt_tokens": 42,
        "total_tokens": 1,
    }
    assert "usage" not in post(fake, "/v1/embeddings", {"model": "uncounted", "input": "a"}).json()


def test_a_dropped_connection_is_scripted_by_drop_after_zero(fake: FakeUpstream) -> None:
    fake.script("text-embedding-3-small", drop_after=0)

    with pytest.raises(httpx.TransportError):
        embed(fake, input="a")


# The Gemini API's batchEmbedContents


def test_gemini_embeds_each_request_in_order_without_a_count(fake: FakeUpstream) -> None:
    path = "/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents"
    body = batch("gemini-embedding-001", "first", "second")
    body["requests"][1]["outputDimensionality"] = 3

    response = post(fake, path, body, headers={"x-goog-api-key": "k"})

    assert response.status_code == 200
    assert response.json() == {
        "embeddings": [
            {"values": embedding_vector("first")},
            {"values": embedding_vector("second", 3)},
        ]
    }


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (batch("gemini-embedding-001", *["x"] * 101), 400),
        (batch("text-embedding-004", "x"), 400),
        (batch("gemini-embedding-001", "x", outputDimensionality=0), 400),
        ({"requests": []}, 400),
        ({**batch("gemini-embedding-001", "x"), "model": "x"}, 400),
    ],
)
def test_gemini_refuses_what_the_api_refuses(
    fake: FakeUpstream, body: dict[str, Any], status: int
) -> None:
    path = "/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents"
    response = post(fake, path, body, headers={"x-goog-api-key": "k"})

    assert response.status_code == status
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_gemini_refuses_a_call_without_a_key_and_fails_as_scripted(fake: FakeUpstream) -> None:
    path = "/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents"
    body = batch("gemini-embedding-001", "x")

    assert post(fake, path, body).status_code == 403
    fake.script("gemini-embedding-001", fail={"status": 503})
    failed = post(fake, path, body, headers={"x-goog-api-key": "k"})
    assert failed.status_code == 503
    assert failed.json()["error"]["status"] == "UNAVAILABLE"


# Vertex's predict


def test_vertex_predicts_each_instance_with_its_token_count(fake: FakeUpstream) -> None:
    headers = {"authorization": f"Bearer {vertex_token(fake)}"}
    body = {
        "instances": [{"content": "two words"}, {"content": "and three words"}],
        "parameters": {"outputDimensionality": 4},
    }

    response = post(fake, f"{VERTEX_PATH}/text-embedding-005:predict", body, headers=headers)

    assert response.status_code == 200
    assert response.json() == {
        "predictions": [
            {
                "embeddings": {
                    "values": embedding_vector("two words", 4),
                    "statistics": {"truncated": False, "token_count": 2},
                }
            },
            {
                "embeddings": {
                    "values": embedding_vector("and three words", 4),
                    "statistics": {"truncated": False, "token_count": 3},
                }
            },
        ],
        "metadata": {"billableCharacterCount": 24},
    }


def test_vertex_takes_one_instance_for_gemini_embedding_001_and_a_valid_token(
    fake: FakeUpstream,
) -> None:
    headers = {"authorization": f"Bearer {vertex_token(fake)}"}
    url = f"{VERTEX_PATH}/gemini-embedding-001:predict"
    two = {"instances": [{"content": "a"}, {"content": "b"}]}

    assert post(fake, url, two, headers=headers).status_code == 400
    assert post(fake, url, {"instances": [{"content": "a"}]}, headers=headers).status_code == 200
    refused = post(fake, url, {"instances": [{"content": "a"}]}, headers={"authorization": "x"})
    assert refused.status_code == 401


def test_vertex_leaves_the_counts_off_under_no_usage(fake: FakeUpstream) -> None:
    fake.script("text-embedding-005", no_usage=True)
    headers = {"authorization": f"Bearer {vertex_token(fake)}"}

    response = post(
        fake,
        f"{VERTEX_PATH}/text-embedding-005:predict",
        {"instances": [{"content": "a"}]},
        headers=headers,
    )

    assert response.json()["predictions"] == [{"embeddings": {"values": embedding_vector("a")}}]


# Every adapter that serves embeddings reads what the fake answers to what it prepares


@pytest.mark.parametrize(
    ("api", "base", "upstream_id", "tokens"),
    [
        ("openai", "/v1", "text-embedding-3-small", 9),
        ("azure", "/azure/openai/v1", "embed-deployment", 9),
        ("mistral", "/mistral/v1", "codestral-embed", 9),
        ("deepinfra", "/deepinfra/v1/openai", "BAAI/bge-m3", 9),
        ("openai_compatible", "/vllm/v1", "bge-m3", 9),
        ("gemini", "/gemini/v1beta", "gemini-embedding-001", None),
        ("vertex", "/vertex/v1", "text-embedding-005", 9),
    ],
)
@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_each_adapter_reads_the_fakes_answer_in_order(
    fake: FakeUpstream, api: str, base: str, upstream_id: str, tokens: int | None, encoding: str
) -> None:
    adapter = REGISTRY[api]
    secret = vertex_token(fake) if api == "vertex" else "k"
    target = Target(fake.url + base, secret, f"acme/{upstream_id}", upstream_id, project="p")
    prepared = adapter.prepare_embeddings(
        {"input": TEXTS, "dimensions": 5, "encoding_format": encoding}, target
    )

    response = httpx.post(
        prepared.url, content=prepared.body, headers=prepared.headers, trust_env=False
    )

    assert response.status_code == 200, response.text
    assert adapter.embeddings(response.content) == Embeddings(
        [embedding_vector(text, 5) for text in TEXTS], tokens
    )
