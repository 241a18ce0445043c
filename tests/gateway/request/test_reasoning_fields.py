"""The reasoning object ({effort, max_tokens, exclude, enabled}, with reasoning_effort and
include_reasoning as its aliases) over real HTTP: refused with 400 when it cannot be read,
mapped onto each provider's API (the exact body the fake upstream receives), and `exclude`
keeping the reasoning out of the answer and the stream while its tokens are billed."""

from __future__ import annotations

from typing import Any

import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from tests.gateway.calls import (
    HI,
    error_of,
    events,
    settle,
    settled_world,  # noqa: F401 - autouse
    streamed_text,
)
from tests.gateway.conftest import World, model, offer, provider

SONNET = "claude-sonnet-4-5"
GEMINI_3 = "gemini-3-pro-preview"
FLASH = "gemini-2.5-flash"
GEMINI_PRO = "gemini-2.5-pro"
THOUGHT = "Recall the capitals of Europe."


@pytest.fixture
def reasoners(world: World) -> World:
    """Claude Sonnet (thinking by budget), Gemini 3 Pro (levels low and high), Gemini 2.5
    Flash (budgets, can stop thinking) and Gemini 2.5 Pro (budgets, cannot)."""
    url = world.fake.url
    claude = provider("anthropic", "anthropic", f"{url}/anthropic")
    offer(model("anthropic/claude-sonnet-4-5"), claude, SONNET, "3", "15", tools=True,
          reasoning_efforts=["low", "medium", "high"])  # fmt: skip
    google = provider("gemini", "gemini", f"{url}/v1beta")
    offer(model("google/gemini-3-pro"), google, GEMINI_3, "2", "12",
          reasoning_efforts=["low", "high"])  # fmt: skip
    offer(model("google/gemini-2.5-flash"), google, FLASH, "0.3", "2.5",
          reasoning_efforts=["none", "low", "medium", "high"])  # fmt: skip
    offer(model("google/gemini-2.5-pro"), google, GEMINI_PRO, "1.25", "10",
          reasoning_efforts=["low", "medium", "high"])  # fmt: skip
    settle()
    return world


def ask(selector: str = "openai/gpt-5", **fields: Any) -> dict[str, Any]:
    return {"model": selector, "messages": HI, **fields}


def sent(world: World, upstream_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body the provider received for this call."""
    response = world.post(body)
    assert response.status_code == 200, response.text
    calls = world.fake.requests(upstream_id)
    assert len(calls) == 1, calls
    found: dict[str, Any] = calls[0]["body"]
    return found


# Refused when unreadable


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"reasoning": "high"}, "'reasoning' must be an object of effort, max_tokens, exclude, "
         "enabled"),
        ({"reasoning": {"effort": "turbo"}}, "'reasoning.effort' must be one of none, minimal, "
         "low, medium, high, xhigh"),
        ({"reasoning_effort": "turbo"}, "'reasoning_effort' must be one of none, minimal, low, "
         "medium, high, xhigh"),
        ({"reasoning_effort": 3}, "'reasoning_effort' must be one of none, minimal, low, "
         "medium, high, xhigh"),
        ({"reasoning": {"max_tokens": 0}}, "'reasoning.max_tokens' must be a positive integer "
         "of tokens"),
        ({"reasoning": {"max_tokens": "2000"}}, "'reasoning.max_tokens' must be a positive "
         "integer of tokens"),
        ({"reasoning": {"max_tokens": True}}, "'reasoning.max_tokens' must be a positive "
         "integer of tokens"),
        ({"reasoning": {"exclude": "yes"}}, "'reasoning.exclude' must be a boolean"),
        ({"reasoning": {"enabled": 1}}, "'reasoning.enabled' must be a boolean"),
        ({"include_reasoning": "no"}, "'include_reasoning' must be a boolean"),
    ],
)  # fmt: skip
def test_a_reasoning_field_that_cannot_be_read_is_refused(
    world: World, fields: dict[str, Any], message: str
) -> None:
    response = world.post(ask(**fields))

    error = error_of(response, 400, "invalid_value")
    assert error["message"] == message
    assert world.fake.requests() == []


# OpenAI's effort


@pytest.mark.parametrize(
    ("fields", "effort"),
    [
        ({"reasoning": {"effort": "high"}}, "high"),
        ({"reasoning": {"effort": "low"}, "reasoning_effort": "high"}, "low"),
        ({"reasoning_effort": "medium"}, "medium"),
        ({"reasoning": {"max_tokens": 5000}}, "medium"),
        ({"reasoning": {"max_tokens": 20000}}, "high"),
        ({"reasoning": {"max_tokens": 100}}, "minimal"),
        ({"reasoning": {"enabled": True}}, "medium"),
        ({"reasoning": {"enabled": False, "effort": "high"}}, "minimal"),
        ({"reasoning": {"effort": "xhigh", "exclude": True}}, "high"),
    ],
)
def test_openai_gets_the_reasoning_as_its_effort_alone(
    world: World, fields: dict[str, Any], effort: str
) -> None:
    body = sent(world, "gpt-5", ask(**fields))

    assert body["reasoning_effort"] == effort
    assert "reasoning" not in body
    assert "include_reasoning" not in body


@pytest.mark.parametrize(
    "fields",
    [{"reasoning": {"exclude": True}}, {"include_reasoning": False}, {"reasoning": {}}],
)
def test_openai_gets_no_effort_where_the_call_asks_none(
    world: World, fields: dict[str, Any]
) -> None:
    body = sent(world, "gpt-5", ask(**fields))

    assert not {"reasoning", "reasoning_effort", "include_reasoning"} & set(body)


# Anthropic's thinking budget


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"reasoning": {"max_tokens": 3000}, "max_tokens": 8000},
         {"max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 3000}}),
        ({"reasoning": {"max_tokens": 3000}},
         {"max_tokens": 7096, "thinking": {"type": "enabled", "budget_tokens": 3000}}),
        ({"reasoning": {"max_tokens": 500}, "max_tokens": 8000},
         {"max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ({"reasoning": {"max_tokens": 9000}, "max_tokens": 8000},
         {"max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 7999}}),
        ({"reasoning": {"effort": "medium"}, "max_tokens": 8000},
         {"max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 4000}}),
        ({"reasoning_effort": "high", "max_completion_tokens": 10000},
         {"max_tokens": 10000, "thinking": {"type": "enabled", "budget_tokens": 8000}}),
        ({"reasoning": {"effort": "low"}, "max_tokens": 1024}, {"max_tokens": 1024}),
        ({"reasoning": {"enabled": False, "max_tokens": 3000}}, {"max_tokens": 4096}),
        ({"reasoning": {"exclude": True}}, {"max_tokens": 4096}),
    ],
)  # fmt: skip
def test_anthropic_gets_a_thinking_budget_within_its_limits(
    reasoners: World, fields: dict[str, Any], expected: dict[str, Any]
) -> None:
    body = sent(reasoners, SONNET, ask("anthropic/claude-sonnet-4-5", **fields))

    assert {k: body[k] for k in ("max_tokens", "thinking") if k in body} == expected


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_anthropic_thinks_not_where_the_tool_choice_forces_a_tool(
    reasoners: World, choice: Any
) -> None:
    reasoners.fake.script(SONNET, tool_calls=[{"name": "get_weather", "arguments": "{}"}])
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    call = ask("anthropic/claude-sonnet-4-5", tools=[tool], tool_choice=choice,
               reasoning={"effort": "high"})  # fmt: skip

    body = sent(reasoners, SONNET, call)

    assert "thinking" not in body
    assert body["tool_choice"]["type"] in ("any", "tool")


# Gemini's thinking budget and level


@pytest.mark.parametrize(
    ("upstream_id", "selector", "fields", "thinking"),
    [
        (GEMINI_3, "google/gemini-3-pro", {"reasoning": {"effort": "none"}},
         {"thinkingLevel": "LOW", "includeThoughts": True}),
        (GEMINI_3, "google/gemini-3-pro", {"reasoning": {"enabled": False}},
         {"thinkingLevel": "LOW", "includeThoughts": True}),
        (GEMINI_3, "google/gemini-3-pro", {"reasoning": {"effort": "xhigh", "exclude": True}},
         {"thinkingLevel": "HIGH", "includeThoughts": False}),
        (GEMINI_3, "google/gemini-3-pro", {"reasoning": {"max_tokens": 20000}},
         {"thinkingLevel": "HIGH", "includeThoughts": True}),
        (FLASH, "google/gemini-2.5-flash", {"reasoning": {"enabled": False}},
         {"thinkingBudget": 0}),
        (FLASH, "google/gemini-2.5-flash", {"reasoning": {"max_tokens": 2000}},
         {"thinkingBudget": 2000, "includeThoughts": True}),
        (FLASH, "google/gemini-2.5-flash", {"reasoning": {"max_tokens": 50000}},
         {"thinkingBudget": 24576, "includeThoughts": True}),
        (FLASH, "google/gemini-2.5-flash", {"include_reasoning": False, "reasoning_effort": "low"},
         {"thinkingBudget": 1024, "includeThoughts": False}),
        (GEMINI_PRO, "google/gemini-2.5-pro", {"reasoning": {"max_tokens": 50}},
         {"thinkingBudget": 128, "includeThoughts": True}),
        (GEMINI_PRO, "google/gemini-2.5-pro", {"reasoning": {"enabled": False}},
         {"thinkingBudget": 1024, "includeThoughts": True}),
    ],
)  # fmt: skip
def test_gemini_gets_a_budget_or_a_level_the_model_takes(
    reasoners: World,
    upstream_id: str,
    selector: str,
    fields: dict[str, Any],
    thinking: dict[str, Any],
) -> None:
    body = sent(reasoners, upstream_id, ask(selector, **fields))

    assert body["generationConfig"]["thinkingConfig"] == thinking


def test_gemini_gets_no_thinking_config_for_exclude_alone(reasoners: World) -> None:
    body = sent(reasoners, GEMINI_3, ask("google/gemini-3-pro", reasoning={"exclude": True}))

    assert "generationConfig" not in body


# exclude: the reasoning kept out of the answer, and billed


SERVED_BY = {
    "openai": ("openai/gpt-5", "gpt-5"),
    "anthropic": ("anthropic/claude-sonnet-4-5", SONNET),
    "gemini": ("google/gemini-3-pro", GEMINI_3),
}
EXCLUDING = [{"reasoning": {"effort": "high", "exclude": True}}, {"include_reasoning": False}]


def reasoning_tokens(request_id: str) -> int:
    drain()
    return Generation.objects.get(request_id=request_id).reasoning_tokens


@pytest.mark.parametrize("fields", EXCLUDING, ids=["exclude", "include_reasoning"])
@pytest.mark.parametrize("api", list(SERVED_BY))
def test_excluded_reasoning_stays_out_of_a_plain_answer_and_is_billed(
    reasoners: World, api: str, fields: dict[str, Any]
) -> None:
    selector, upstream_id = SERVED_BY[api]
    reasoners.fake.script(upstream_id, reasoning=THOUGHT, text="Paris.")

    response = reasoners.post(ask(selector, **fields))

    assert response.status_code == 200, response.text
    body = response.json()
    message = body["choices"][0]["message"]
    assert message["content"] == "Paris."
    assert not {"reasoning", "reasoning_details"} & set(message)
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0
    assert reasoning_tokens(body["id"]) > 0


@pytest.mark.parametrize("fields", EXCLUDING, ids=["exclude", "include_reasoning"])
@pytest.mark.parametrize("api", list(SERVED_BY))
def test_excluded_reasoning_stays_out_of_a_stream_and_is_billed(
    reasoners: World, api: str, fields: dict[str, Any]
) -> None:
    selector, upstream_id = SERVED_BY[api]
    reasoners.fake.script(upstream_id, reasoning=THOUGHT, text="Paris.")

    response = reasoners.stream(ask(selector, stream_options={"include_usage": True}, **fields))

    assert response.status_code == 200, response.text
    chunks = events(response.text)
    assert chunks[-1] == "[DONE]"
    deltas = [c["delta"] for chunk in chunks[:-1] for c in chunk["choices"]]
    assert not [d for d in deltas if "reasoning" in d or "reasoning_details" in d]
    assert streamed_text(chunks) == "Paris."
    usage = chunks[-2]["usage"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] > 0
    assert reasoning_tokens(chunks[0]["id"]) > 0


@pytest.mark.parametrize("api", list(SERVED_BY))
def test_reasoning_comes_back_where_it_is_not_excluded(reasoners: World, api: str) -> None:
    selector, upstream_id = SERVED_BY[api]
    reasoners.fake.script(upstream_id, reasoning=THOUGHT, text="Paris.")

    response = reasoners.post(ask(selector, reasoning={"effort": "high", "exclude": False}))

    assert response.json()["choices"][0]["message"]["reasoning"] == THOUGHT


# require_parameters


def test_exclude_alone_asks_require_parameters_for_no_reasoning(world: World) -> None:
    provider_prefs = {"require_parameters": True}
    call = ask("openai/gpt-5-mini", provider=provider_prefs, reasoning={"exclude": True})

    assert world.post(call).status_code == 200
    off = ask("openai/gpt-5-mini", provider=provider_prefs, reasoning={"enabled": False})
    assert world.post(off).status_code == 200
    thinking = ask("openai/gpt-5-mini", provider=provider_prefs, reasoning={"effort": "low"})
    error_of(world.post(thinking), 404, "model_not_found")
