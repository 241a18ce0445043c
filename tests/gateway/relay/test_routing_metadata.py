"""`X-Momor-Metadata: enabled`: the answer explains its routing in `momor_metadata` (the plain
body, the stream's last chunk, an error body after routing, a refusal where no candidate was
left), over real HTTP against the fake upstream; without the header nothing changes; no key or
upstream address is ever in it."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.models import Model, Provider
from tests.gateway.calls import (
    HI,
    ask,
    error_of,
    events,
    fail_everywhere,
    save_key,
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World, offer

ON = {"x-momor-metadata": "enabled"}
OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"


def post(world: World, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return world.post(body, headers=ON if headers is None else headers)


def stream(world: World, body: dict[str, Any]) -> list[Any]:
    response = post(world, {**body, "stream": True})
    assert response.status_code == 200, response.text
    return events(response.text)


def places(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["provider"], c["outcome"]) for c in metadata["candidates"]]


# Without the header


@pytest.mark.parametrize("value", [None, "disabled", "yes", ""])
def test_without_the_header_nothing_changes(world: World, value: str | None) -> None:
    headers = {} if value is None else {"x-momor-metadata": value}
    assert "momor_metadata" not in post(world, ask(), headers).json()
    chunks = events(post(world, ask(stream=True), headers).text)
    assert not any(isinstance(c, dict) and "momor_metadata" in c for c in chunks)
    fail_everywhere(world.fake)
    error_of(post(world, ask(), headers), 503, None)


def test_the_header_is_read_in_any_case(world: World) -> None:
    assert "momor_metadata" in post(world, ask(), {"X-Momor-Metadata": "Enabled"}).json()


# A served call


def test_a_plain_answer_explains_every_candidate_and_try(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503})
    body = post(world, ask())
    assert body.status_code == 200, body.text
    metadata = body.json()["momor_metadata"]
    assert metadata["requested"] == ["openai/gpt-5"]
    assert metadata["selectors"] == [{"selector": "openai/gpt-5", "models": ["openai/gpt-5"]}]
    assert places(metadata) == [
        ("openai", "failed"),
        ("azure@eu", "served"),
        ("azure", "not_tried"),
    ]
    first, second, third = metadata["candidates"]
    assert first["position"] == 1 and first["status"] == 503 and first["moves_on"] is True
    assert first["provider_name"] == "OpenAI" and first["key"] == "momor"
    assert isinstance(first["time_ms"], int) and "detail" in first
    assert first["why"] == [
        "price 1.25 prompt + 10 completion USD per million: cheapest first",
        "Momor's key",
    ]
    assert second["status"] == 200 and isinstance(second["time_ms"], int)
    assert second["provider_name"] == "Azure OpenAI"
    assert third["detail"] == "an earlier candidate served the call"
    assert metadata["summary"] == "3 candidates, 0 left out, served by azure@eu on try 2"


def test_the_stream_ends_on_a_chunk_of_metadata(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 429})
    chunks = stream(world, ask())
    assert chunks[-1] == "[DONE]"
    last = chunks[-2]
    assert last["choices"] == [] and last["provider"] == "Azure OpenAI"
    assert places(last["momor_metadata"]) == [
        ("openai", "failed"),
        ("azure@eu", "served"),
        ("azure", "not_tried"),
    ]
    assert not any("momor_metadata" in c for c in chunks[:-2])


def test_a_stream_that_breaks_carries_the_metadata_on_its_error_chunk(world: World) -> None:
    world.fake.script(OPENAI, stream_error_after=1)
    chunks = stream(world, ask())
    assert chunks[-1] != "[DONE]"
    assert chunks[-1]["error"]["code"] == 502 or chunks[-1]["error"]
    candidates = chunks[-1]["momor_metadata"]["candidates"]
    assert candidates[0]["outcome"] == "broken"
    assert chunks[-1]["momor_metadata"]["summary"].startswith("3 candidates")


def test_the_ranking_reasons_name_the_order_tools_and_keys(world: World) -> None:
    save_key(world.org, "azure", "acme-azure-key")
    settle()
    body = ask(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])
    body["provider"] = {"order": ["azure"]}
    metadata = post(world, body).json()["momor_metadata"]
    candidates = metadata["candidates"]
    assert [(c["provider"], c["key"]) for c in candidates] == [
        ("azure@eu", "own"),
        ("azure@eu", "momor"),
        ("azure", "own"),
        ("azure", "momor"),
        ("openai", "momor"),
    ]
    assert candidates[2]["why"] == [
        "provider.order names azure",
        "price 1.5 prompt + 12 completion USD per million: cheapest first",
        "takes tools",
        "your saved key for it, tried before Momor's",
    ]
    assert candidates[3]["why"][-1] == "Momor's key, after your saved key"
    assert candidates[4]["why"][0] == "provider.order does not name it: after those it names"
    assert metadata["provider"] == {"order": ["azure"]}


def test_allow_fallbacks_false_leaves_the_rest_out_and_says_so(world: World) -> None:
    metadata = post(world, ask(provider={"allow_fallbacks": False})).json()["momor_metadata"]
    assert places(metadata) == [
        ("openai", "served"),
        ("azure@eu", "left_out"),
        ("azure", "left_out"),
    ]
    assert "provider.allow_fallbacks is false" in metadata["candidates"][1]["detail"]


# Errors after routing


def test_every_candidate_failing_explains_each_try(world: World) -> None:
    fail_everywhere(world.fake)
    response = post(world, ask())
    assert response.status_code == 503
    body = response.json()
    assert set(body) == {"error", "momor_metadata"}
    metadata = body["momor_metadata"]
    assert [c["status"] for c in metadata["candidates"]] == [503, 503, 503]
    assert metadata["summary"] == "3 candidates, 0 left out, every one of 3 tries failed"


def test_a_provider_refusing_the_call_itself_stops_and_says_why(world: World) -> None:
    error = {"error": {"message": "bad", "type": "invalid_request_error", "code": "bad_thing"}}
    world.fake.script(OPENAI, fail={"status": 400, "body": error})
    response = post(world, ask())
    assert response.status_code == 400
    first, second, _ = response.json()["momor_metadata"]["candidates"]
    assert (first["outcome"], first["code"], first["moves_on"]) == ("failed", "bad_thing", False)
    assert second["outcome"] == "not_tried"
    assert "its error is about the call itself" in second["detail"]


# Refusals where no candidate is left


def test_a_filter_that_leaves_nothing_says_why_each_was_left_out(world: World) -> None:
    response = post(world, ask(provider={"ignore": ["openai", "azure", "azure@eu"]}))
    assert response.status_code == 404
    body = response.json()
    assert body["error"]["code"] == "model_not_found"
    metadata = body["momor_metadata"]
    assert places(metadata) == [
        ("openai", "left_out"),
        ("azure@eu", "left_out"),
        ("azure", "left_out"),
    ]
    assert {c["why"][0] for c in metadata["candidates"]} == {"provider.ignore names it"}
    assert metadata["summary"] == "0 candidates, 3 left out: no candidate left"


def test_an_input_no_offering_takes_says_so_for_each(world: World) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    body = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": [audio]}]}
    response = post(world, body)
    assert response.status_code == 422
    candidates = response.json()["momor_metadata"]["candidates"]
    assert {c["why"][0] for c in candidates} == {
        "it takes no audio input, which the messages carry"
    }


def test_no_key_under_zero_data_retention_says_so(world: World) -> None:
    response = post(world, ask("openai/gpt-5-mini", provider={"zdr": True}))
    assert response.status_code == 404
    (candidate,) = response.json()["momor_metadata"]["candidates"]
    assert candidate["why"][0].startswith("under zero data retention no key may call it")


def test_a_selector_that_names_nothing_is_explained(world: World) -> None:
    response = post(world, ask("openai/gpt-4"))
    assert response.status_code == 404
    metadata = response.json()["momor_metadata"]
    assert metadata["selectors"] == [
        {
            "selector": "openai/gpt-4",
            "models": [],
            "why": "no configured model with an offering answers to it",
        }
    ]
    assert metadata["candidates"] == []


def test_a_group_selector_names_the_models_its_rules_left_out(world: World) -> None:
    metadata = post(world, ask("tier/low")).json()["momor_metadata"]
    (selector,) = metadata["selectors"]
    assert selector["models"] == ["mistral/mistral-small"]
    assert selector["left_out"] == [
        {
            "model": "old/legacy",
            "why": "deprecated (provider.deprecated, else your organization's default)",
        }
    ]


def test_a_call_without_the_header_is_refused_as_before(world: World) -> None:
    error_of(world.post(ask(provider={"ignore": ["openai", "azure", "azure@eu"]})), 404,
             "model_not_found")  # fmt: skip


# Secrets


def test_no_key_or_upstream_address_is_in_the_metadata(world: World) -> None:
    save_key(world.org, "openai", "acme-openai-secret-key-123")
    settle()
    world.fake.script(
        OPENAI,
        fail={"status": 401, "body": {"error": {"message": "bad key acme-openai-secret-key-123"}}},
    )
    fail_everywhere(world.fake)
    texts = [post(world, ask()).text, post(world, {**ask(), "stream": True}).text]
    for text in texts:
        assert "momor_metadata" in text
        assert "acme-openai-secret-key-123" not in text
        assert MOMOR_UPSTREAM_KEY not in text
        assert world.fake.url not in text


def test_messages_are_not_in_the_metadata(world: World) -> None:
    assert HI[0]["content"] not in str(post(world, ask()).json()["momor_metadata"])


def test_an_embedding_model_named_on_a_chat_call_is_explained_as_left_out(world: World) -> None:
    row = Model.objects.create(id="openai/text-embedding-3-small", kind="embedding")
    offer(row, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.02", "0")
    settle()
    response = post(world, ask("openai/text-embedding-3-small"))
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "model_not_found"
    [selector] = response.json()["momor_metadata"]["selectors"]
    assert selector == {
        "selector": "openai/text-embedding-3-small",
        "models": [],
        "left_out": [{"model": "openai/text-embedding-3-small", "why": "an embedding model"}],
    }
