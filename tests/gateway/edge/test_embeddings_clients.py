"""Real clients of POST /v1/embeddings, pointed at Momor by their base URL and a Momor key alone:
the openai SDK's AsyncOpenAI, and LangChain's OpenAIEmbeddings (langchain-openai), sync and
async, documents and a query.

OpenAIEmbeddings left as it is (`check_embedding_ctx_length=True`) cuts each text into tokens
with tiktoken and sends token arrays, not text: an OpenAI-family offering takes them as written,
a text-only one (Gemini, Vertex, Mistral) cannot carry them, so a model served there alone is a
422 until the client sends text (`check_embedding_ctx_length=False`, the setting docs/api.md
names). tiktoken downloads its encodings on first use, which these tests cannot: a byte-level
encoding stands in for cl100k_base (the ids it makes are as good as any to an embeddings route
that passes them on)."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
import tiktoken
from langchain_openai import OpenAIEmbeddings

from gateway.models import Model, Provider
from testkit.fake_embeddings import embedding_vector
from tests.gateway.calls import (
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import World, offer, provider

OPENAI_MODEL = "openai/text-embedding-3-small"
GEMINI_MODEL = "google/gemini-embedding-001"
DOCUMENTS = ["Momor routes calls.", "It bills them exactly.", "Embeddings too."]
QUERY = "What does Momor bill?"
BYTES = tiktoken.Encoding(
    "bytes",
    pat_str=r"\S+|\s+",
    mergeable_ranks={bytes([value]): value for value in range(256)},
    special_tokens={},
)


@pytest.fixture(autouse=True)
def embedding_models(world: World) -> None:
    """One model on OpenAI (which takes token arrays), one on the Gemini API (text alone)."""
    gemini = provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    row = Model.objects.create(id=OPENAI_MODEL, kind="embedding")
    offer(row, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.02", "0")
    row = Model.objects.create(id=GEMINI_MODEL, kind="embedding")
    offer(row, gemini, "gemini-embedding-001", "0.15", "0")
    settle()


@pytest.fixture(autouse=True)
def offline_tiktoken(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every tiktoken encoding asked for is the byte-level stand-in (none can be downloaded)."""
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: BYTES)
    monkeypatch.setattr(tiktoken, "encoding_for_model", lambda model: BYTES)
    yield


def tokens(text: str) -> list[int]:
    return BYTES.encode_ordinary(text)


def langchain(world: World, model: str, **settings: object) -> OpenAIEmbeddings:
    """OpenAIEmbeddings as a user points it at Momor: base URL, key, model; nothing else."""
    return OpenAIEmbeddings(
        model=model,
        base_url=world.url + "/v1",
        api_key=world.key,
        **settings,
    )


# The openai SDK, async


async def test_the_async_sdk_embeds_texts_in_order(world: World) -> None:
    client = openai.AsyncOpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)
    answer = await client.embeddings.create(model=GEMINI_MODEL, input=DOCUMENTS)
    assert [item.embedding for item in answer.data] == [embedding_vector(d) for d in DOCUMENTS]
    assert answer.model == GEMINI_MODEL
    (call,) = world.fake.requests()
    assert call["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    await client.close()


async def test_the_async_sdk_sends_token_arrays_and_dimensions(world: World) -> None:
    client = openai.AsyncOpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)
    answer = await client.embeddings.create(
        model=OPENAI_MODEL, input=[[1, 2], [3]], dimensions=4, encoding_format="float"
    )
    assert [item.embedding for item in answer.data] == [
        embedding_vector([1, 2], 4),
        embedding_vector([3], 4),
    ]
    assert (answer.usage.prompt_tokens, answer.usage.total_tokens) == (3, 3)
    await client.close()


async def test_the_async_sdk_raises_its_own_error_for_a_chat_model(world: World) -> None:
    client = openai.AsyncOpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        await client.embeddings.create(model="openai/gpt-5", input="a")
    assert raised.value.code == "model_not_found"
    await client.close()


# LangChain's OpenAIEmbeddings


def test_langchain_as_it_is_embeds_documents_and_a_query_as_token_arrays(world: World) -> None:
    embeddings = langchain(world, OPENAI_MODEL)
    assert embeddings.embed_documents(DOCUMENTS) == [embedding_vector(tokens(d)) for d in DOCUMENTS]
    assert embeddings.embed_query(QUERY) == embedding_vector(tokens(QUERY))
    documents, query = world.fake.requests()
    assert documents["body"] == {
        "model": "text-embedding-3-small",
        "input": [tokens(d) for d in DOCUMENTS],
        "encoding_format": "base64",  # the SDK's default, decoded by it
    }
    assert query["body"]["input"] == [tokens(QUERY)]


async def test_langchain_as_it_is_embeds_asynchronously(world: World) -> None:
    embeddings = langchain(world, OPENAI_MODEL)
    assert await embeddings.aembed_documents(DOCUMENTS) == [
        embedding_vector(tokens(d)) for d in DOCUMENTS
    ]
    assert await embeddings.aembed_query(QUERY) == embedding_vector(tokens(QUERY))


def test_langchain_as_it_is_cannot_reach_a_text_only_model(world: World) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as raised:
        langchain(world, GEMINI_MODEL).embed_query(QUERY)
    assert "embeds text, not token arrays" in str(raised.value)
    assert world.fake.requests() == []


def test_langchain_sending_text_reaches_any_model(world: World) -> None:
    for model, upstream_id in (
        (GEMINI_MODEL, "gemini-embedding-001"),
        (OPENAI_MODEL, "text-embedding-3-small"),
    ):
        embeddings = langchain(world, model, check_embedding_ctx_length=False)
        assert embeddings.embed_documents(DOCUMENTS) == [embedding_vector(d) for d in DOCUMENTS]
        assert embeddings.embed_query(QUERY) == embedding_vector(QUERY)
        assert tried(world.fake) == [upstream_id, upstream_id]
        world.fake.reset()


async def test_langchain_sending_text_embeds_asynchronously(world: World) -> None:
    embeddings = langchain(world, GEMINI_MODEL, check_embedding_ctx_length=False, dimensions=4)
    assert await embeddings.aembed_documents(DOCUMENTS) == [
        embedding_vector(d, 4) for d in DOCUMENTS
    ]
    assert await embeddings.aembed_query(QUERY) == embedding_vector(QUERY, 4)


def test_langchain_reads_momors_refusal(world: World) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        langchain(world, "openai/gpt-5", check_embedding_ctx_length=False).embed_query(QUERY)
    assert "openai/gpt-5 is a chat model" in str(raised.value)
