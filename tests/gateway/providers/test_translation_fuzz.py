"""Every adapter's request translation given wrong-typed values of every field it reads: each
call either translates (to a body that encodes as JSON) or fails that offering cleanly with
CannotCarry, so the call moves to the next candidate. Nothing else may escape: an escaping
exception would have ended the whole call in a 500.

A rich call holding every field some adapter reads is mutated one place at a time: each value
(and each key's presence) replaced, first by a fixed set of wrong types, then by arbitrary
JSON that hypothesis draws."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.providers import REGISTRY
from gateway.providers.contract import Adapter, CannotCarry, Target

Path = tuple[str | int, ...]

SIGNED = {"anthropic.signature": "sig", "google.thought_signature": "gsig"}
RICH: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {
            "role": "developer",
            "content": [{"type": "text", "text": "Really.", "cache_control": {"type": "x"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look.", "cache_control": {"type": "ephemeral"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {
                    "type": "file",
                    "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a"},
                },
                {"type": "file", "file": {"file_data": "data:text/plain;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Calling."}, {"type": "refusal", "refusal": "no"}],
            "reasoning": "thought",
            "reasoning_content": "thought",
            "reasoning_details": [
                {"type": "reasoning.text", "text": "thought", "data": SIGNED},
                {"type": "reasoning.encrypted", "data": {"anthropic.redacted": "r"}},
            ],
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                    "extra_content": {"google": {"thought_signature": "gsig"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": '{"ok": true}'},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "Thanks."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look it up.",
                "parameters": {"type": "object"},
                "strict": True,
            },
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
    "parallel_tool_calls": False,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}},
    },
    "temperature": 0.5,
    "top_p": 0.9,
    "top_k": 5,
    "stop": ["END"],
    "seed": 7,
    "presence_penalty": 0.1,
    "frequency_penalty": 0.1,
    "n": 1,
    "logprobs": True,
    "top_logprobs": 2,
    "max_tokens": 300,
    "max_completion_tokens": 200,
    "reasoning_effort": "medium",
    "service_tier": "default",
    "user": "user-1",
    "metadata": {"team": "a"},
    "stream_options": {"include_usage": True},
    "store": True,
}
# JSON as orjson reads it: integers within 64 bits (larger ones are read as floats), no NaN.
INTEGERS = st.integers(-(2**63), 2**64 - 1)
NUMBERS = INTEGERS | st.floats(allow_nan=False, allow_infinity=False)
WRONG: list[Any] = [None, True, 0, -1, 1.5, 2**64 - 1, "", "x", [], ["x"], [1], {}, {"a": 1}]
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=8)
    | st.sampled_from(["text", "image_url", "file", "function", "data:"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["type", "text", "url", "name", "a"]), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


def paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every place in a JSON value: each key of each object, each item of each list."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, inner in items:
        yield (*prefix, key)
        if isinstance(inner, dict | list):
            yield from paths(inner, (*prefix, key))


PATHS = list(paths(RICH))


def mutated(path: Path, value: Any, *, remove: bool = False) -> dict[str, Any]:
    body = copy.deepcopy(RICH)
    parent: Any = body
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return body


def target(upstream_id: str, stream: bool) -> Target:
    return Target(
        base_url="https://upstream.example",
        secret="secret",
        model_id="acme/model",
        upstream_id=upstream_id,
        stream=stream,
        reasoning_efforts=("low", "medium", "high"),
        momor_key=True,
        project="acme-project",
    )


TRANSLATING = sorted(REGISTRY)
GEMINI_IDS = ["gemini-2.5-flash", "gemini-3-pro"]
UPSTREAM_IDS = {"gemini": GEMINI_IDS, "vertex": GEMINI_IDS, "anthropic": ["claude-x"]}


def outcomes(body: dict[str, Any]) -> Iterator[tuple[str, str, bool, Any]]:
    """Each adapter's translation of `body`, plain and streamed: the body it would send, or
    the CannotCarry it raised."""
    for api in TRANSLATING:
        for upstream_id in UPSTREAM_IDS.get(api, ["model-1"]):
            for stream in (False, True):
                yield api, upstream_id, stream, _translate(REGISTRY[api], body, upstream_id, stream)


def _translate(adapter: Adapter, body: dict[str, Any], upstream_id: str, stream: bool) -> Any:
    try:
        prepared = adapter.prepare(copy.deepcopy(body), target(upstream_id, stream))
    except CannotCarry as exc:
        return exc
    return orjson.loads(prepared.body)


def assert_carried_or_refused(body: dict[str, Any]) -> None:
    for api, upstream_id, stream, outcome in outcomes(body):
        assert isinstance(outcome, dict | CannotCarry), (api, upstream_id, stream, outcome)


def test_the_rich_call_is_carried_by_every_adapter() -> None:
    for api, upstream_id, stream, outcome in outcomes(RICH):
        assert isinstance(outcome, dict), (api, upstream_id, stream, outcome)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: ".".join(map(str, p)))
def test_a_wrong_type_anywhere_is_carried_or_refused_cleanly(path: Path) -> None:
    for value in WRONG:
        assert_carried_or_refused(mutated(path, value))
    assert_carried_or_refused(mutated(path, None, remove=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=JSON)
def test_any_json_anywhere_is_carried_or_refused_cleanly(path: Path, value: Any) -> None:
    assert_carried_or_refused(mutated(path, value))


@settings(max_examples=100, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(sorted(RICH)), JSON, min_size=1, max_size=4))
def test_several_wrong_fields_at_once_are_carried_or_refused_cleanly(
    fields: dict[str, Any],
) -> None:
    assert_carried_or_refused({**RICH, **fields})
