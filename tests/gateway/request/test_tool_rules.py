"""The tool rules a call sets (max_tool_calls; and, under provider.require_parameters,
parallel_tool_calls: false and a tool_choice of "none", "required" or naming a function), held
against the answer over real HTTP on every adapter: an answer that breaks one fails its
offering, so the call moves to the next candidate before any output, and a stream that has
shown something ends on one error chunk. Without require_parameters, tool_choice and
parallel_tool_calls are the provider's to answer, as Momor's reference says."""

from __future__ import annotations

from dataclasses import dataclass
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
    tried,
)
from tests.gateway.conftest import World, model, offer, provider


@dataclass(frozen=True)
class Family:
    """A model served by two offerings of one API: `first` (cheaper, tried first) and
    `second`, at `second_place`."""

    model: str
    first: str
    second: str
    second_place: str


OPENAI = Family("openai/gpt-5", "gpt-5", "gpt-5-azure-eu", "azure@eu")
ANTHROPIC = Family("acme/claude-tools", "claude-tools-1", "claude-tools-2", "claude-backup")
GEMINI = Family("acme/gemini-tools", "gemini-2.5-flash-tools", "gemini-2.5-flash-b", "aistudio")
FAMILIES = {"openai": OPENAI, "anthropic": ANTHROPIC, "gemini": GEMINI}

WEATHER = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
TIME = {"name": "get_time", "arguments": '{"city": "Paris"}'}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name.removeprefix('get_')} in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_weather", "get_time")
]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
HONOURED = {"provider": {"require_parameters": True}}


def add_families(world: World) -> None:
    url = world.fake.url
    claude = provider("claude", "anthropic", f"{url}/anthropic")
    claude_backup = provider("claude-backup", "anthropic", f"{url}/anthropic")
    claude_model = model(ANTHROPIC.model)
    offer(claude_model, claude, ANTHROPIC.first, "1", "5", tools=True)
    offer(claude_model, claude_backup, ANTHROPIC.second, "2", "8", tools=True)
    gemini = provider("gemini", "gemini", f"{url}/v1beta")
    aistudio = provider("aistudio", "gemini", f"{url}/aistudio/v1beta")
    gemini_model = model(GEMINI.model)
    offer(gemini_model, gemini, GEMINI.first, "0.30", "2.50", tools=True)
    offer(gemini_model, aistudio, GEMINI.second, "0.40", "3", tools=True)


@pytest.fixture(params=list(FAMILIES))
def family(request: pytest.FixtureRequest, world: World) -> Family:
    if request.param != "openai":
        add_families(world)
        settle()
    return FAMILIES[request.param]


def ask(family: Family, **fields: Any) -> dict[str, Any]:
    return {"model": family.model, "messages": HI, "tools": TOOLS, **fields}


def attempts(request_id: str) -> list[tuple[str, str]]:
    drain()
    generation = Generation.objects.get(request_id=request_id)
    return [(a.upstream_id, a.error) for a in generation.attempts.all()]


def names(message: dict[str, Any]) -> list[str]:
    return [call["function"]["name"] for call in message.get("tool_calls") or ()]


def streamed_calls(chunks: list[Any]) -> list[str]:
    """The function each streamed call names, in order."""
    return [
        call["function"]["name"]
        for chunk in chunks
        if isinstance(chunk, dict)
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or ()
        if call.get("function", {}).get("name")
    ]


def served_by_second(world: World, family: Family, body: dict[str, Any], stream: bool) -> Any:
    """The call, answered by the second offering after the first broke a rule: the answer's
    tool calls, and the reason the first try failed."""
    if stream:
        response = world.stream(body)
        assert response.status_code == 200, response.text
        chunks = events(response.text)
        assert chunks[-1] == "[DONE]"
        made = streamed_calls(chunks)
    else:
        response = world.post(body)
        assert response.status_code == 200, response.text
        made = names(response.json()["choices"][0]["message"])
    assert response.headers["x-momor-provider"] == family.second_place
    assert tried(world.fake) == [family.first, family.second]
    first, second = attempts(response.headers["x-momor-request-id"])
    assert first[0] == family.first
    assert second == (family.second, "")
    return made, first[1]


MODES = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])


@MODES
def test_more_calls_than_max_tool_calls_move_to_the_next_candidate(
    world: World, family: Family, stream: bool
) -> None:
    world.fake.script(family.first, tool_calls=[WEATHER, TIME])
    world.fake.script(family.second, tool_calls=[WEATHER])

    made, reason = served_by_second(world, family, ask(family, max_tool_calls=1), stream)

    assert made == ["get_weather"]
    assert reason == (
        "The answer broke the call's tool rules: it made more tool calls than max_tool_calls "
        "allows (1)."
    )


@MODES
def test_several_calls_when_parallel_is_false_move_to_the_next_candidate(
    world: World, family: Family, stream: bool
) -> None:
    world.fake.script(family.first, tool_calls=[WEATHER, TIME])
    world.fake.script(family.second, tool_calls=[TIME])

    made, reason = served_by_second(
        world, family, ask(family, parallel_tool_calls=False, **HONOURED), stream
    )

    assert made == ["get_time"]
    assert reason.endswith("it made more than one tool call, and parallel_tool_calls is false.")


@MODES
def test_a_call_to_another_function_than_the_named_one_moves_on(
    world: World, family: Family, stream: bool
) -> None:
    world.fake.script(family.first, tool_calls=[TIME])
    world.fake.script(family.second, tool_calls=[WEATHER])

    made, reason = served_by_second(
        world, family, ask(family, tool_choice=NAMED, **HONOURED), stream
    )

    assert made == ["get_weather"]
    assert reason.endswith("it called get_time, and tool_choice names get_weather.")


@MODES
def test_a_call_when_tool_choice_is_none_moves_on(
    world: World, family: Family, stream: bool
) -> None:
    world.fake.script(family.first, tool_calls=[WEATHER])
    world.fake.script(family.second, text="Sunny.")

    made, reason = served_by_second(
        world, family, ask(family, tool_choice="none", **HONOURED), stream
    )

    assert made == []
    assert reason.endswith("it called a tool, and tool_choice is none.")


def test_no_call_when_one_is_required_moves_on(world: World, family: Family) -> None:
    world.fake.script(family.first, text="Sunny.")
    world.fake.script(family.second, tool_calls=[WEATHER])

    made, reason = served_by_second(
        world, family, ask(family, tool_choice="required", **HONOURED), False
    )

    assert made == ["get_weather"]
    assert reason.endswith("it called no tool, and tool_choice requires one.")


def test_a_stream_that_ends_without_the_required_call_ends_on_one_error_chunk(
    world: World, family: Family
) -> None:
    world.fake.script(family.first, text="Sunny.")

    response = world.stream(ask(family, tool_choice="required", **HONOURED))

    chunks = events(response.text)
    assert streamed_text(chunks[:-1]) == "Sunny."
    last = chunks[-1]
    message = "The answer broke the call's tool rules: it called no tool, and tool_choice "
    assert last["error"] == {"code": 502, "message": message + "requires one."}
    assert last["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
    assert tried(world.fake) == [family.first]


def test_a_stream_breaking_a_rule_after_output_ends_on_one_error_chunk(
    world: World, family: Family
) -> None:
    world.fake.script(family.first, text="Let me look.", tool_calls=[WEATHER, TIME])

    response = world.stream(ask(family, parallel_tool_calls=False, **HONOURED))

    chunks = events(response.text)
    assert "[DONE]" not in chunks
    assert streamed_calls(chunks) == []  # calls are held back under a rule on their number
    assert chunks[-1]["error"]["message"].endswith(
        "it made more than one tool call, and parallel_tool_calls is false."
    )
    assert tried(world.fake) == [family.first]


@MODES
def test_an_answer_that_keeps_the_rules_is_served_by_the_first(
    world: World, family: Family, stream: bool
) -> None:
    world.fake.script(family.first, tool_calls=[WEATHER, WEATHER])
    body = ask(family, max_tool_calls=2, tool_choice=NAMED, **HONOURED)

    response = world.stream(body) if stream else world.post(body)

    assert response.status_code == 200, response.text
    assert tried(world.fake) == [family.first]


@MODES
def test_every_candidate_breaking_a_rule_answers_with_the_last_reason(
    world: World, stream: bool
) -> None:
    for upstream_id in ("gpt-5", "gpt-5-azure-eu", "gpt-5-azure"):
        world.fake.script(upstream_id, tool_calls=[WEATHER, TIME])
    body = ask(OPENAI, max_tool_calls=1)

    response = world.stream(body) if stream else world.post(body)

    error = error_of(response, 502, None)
    assert error["type"] == "server_error"
    assert error["message"] == (
        "azure: The answer broke the call's tool rules: it made more tool calls than "
        "max_tool_calls allows (1)."
    )


def test_max_tool_calls_is_not_sent_to_the_provider(world: World) -> None:
    response = world.post(ask(OPENAI, max_tool_calls=3))

    assert response.status_code == 200, response.text
    sent = world.fake.requests("gpt-5")[0]["body"]
    assert "max_tool_calls" not in sent
    assert sent["tools"] == TOOLS


@pytest.mark.parametrize("value", [0, 1025, -1, "2", True, 1.5, [1]])
def test_a_max_tool_calls_out_of_bounds_is_refused(world: World, value: Any) -> None:
    response = world.post(ask(OPENAI, max_tool_calls=value))

    error = error_of(response, 400, "invalid_value")
    assert error["message"] == "'max_tool_calls' must be an integer from 1 to 1,024"
    assert world.fake.requests() == []


def test_the_tool_rules_still_go_to_the_provider(world: World) -> None:
    world.fake.script("gpt-5", tool_calls=[WEATHER])
    body = ask(OPENAI, tool_choice=NAMED, parallel_tool_calls=False)

    assert world.post(body).status_code == 200

    sent = world.fake.requests("gpt-5")[0]["body"]
    assert (sent["tool_choice"], sent["parallel_tool_calls"]) == (NAMED, False)


@MODES
@pytest.mark.parametrize(
    ("rule", "answer"),
    [
        ({"tool_choice": "required"}, {"text": "Sunny."}),
        ({"tool_choice": NAMED}, {"tool_calls": [TIME]}),
        ({"tool_choice": "none"}, {"tool_calls": [WEATHER]}),
        ({"parallel_tool_calls": False}, {"tool_calls": [WEATHER, TIME]}),
    ],
    ids=["required", "named", "none", "parallel"],
)
def test_without_require_parameters_the_answer_to_a_tool_rule_is_the_providers(
    world: World, family: Family, stream: bool, rule: dict[str, Any], answer: dict[str, Any]
) -> None:
    world.fake.script(family.first, **answer)

    body = ask(family, **rule)
    response = world.stream(body) if stream else world.post(body)

    assert response.status_code == 200, response.text
    assert tried(world.fake) == [family.first]
    if stream:
        chunks = events(response.text)
        assert chunks[-1] == "[DONE]"
        assert streamed_calls(chunks) == names({"tool_calls": _calls(answer)})
    else:
        message = response.json()["choices"][0]["message"]
        assert names(message) == names({"tool_calls": _calls(answer)})
    drain()
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.status == "success"


def _calls(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"function": call} for call in answer.get("tool_calls", ())]
