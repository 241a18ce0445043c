"""parse_call, pure: a body read once into the frozen call the layers below take, its checks
in the spec's order (depth, routing fields, tags), and nothing of Momor's own fields in what
goes upstream."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gateway.request.call import MAX_DEPTH, ChatCall, json_object, parse_call
from gateway.request.errors import GatewayError

PLACES = frozenset({"openai", "mistral"})
ROOT = Path(__file__).resolve().parents[3]


def parsed(body: dict[str, Any], headers: dict[str, str] | None = None) -> ChatCall:
    raw = json.dumps(body).encode()  # orjson refuses to write a body as deep as some here
    return parse_call(body, raw, PLACES, headers or {})


def refusal(body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    with pytest.raises(GatewayError) as caught:
        parsed(body, headers)
    assert (caught.value.status, caught.value.code) == (400, "invalid_value")
    return caught.value.message


def test_the_call_holds_options_tags_size_and_the_request_without_momors_fields() -> None:
    body = {
        "model": "openai/gpt-4o",
        "models": ["mistral/small"],
        "provider": {"order": ["openai"]},
        "session_id": "s-1",
        "max_tool_calls": 2,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "temperature": 0.5,
    }
    call = parsed(body, {"x-request-id": "r-1", "x-title": "App"})
    assert call.request == {
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "temperature": 0.5,
    }
    assert call.options.selectors == ("openai/gpt-4o", "mistral/small")
    assert call.options.prefs.order == ("openai",)
    assert call.options.stream is True
    assert (call.tags.session_id, call.tags.request_id, call.tags.app) == ("s-1", "r-1", "App")
    assert call.size == len(json.dumps(body).encode())
    assert body["model"] == "openai/gpt-4o"  # the body read is left as it was


def test_the_call_is_frozen() -> None:
    call = parsed({"model": "a/b", "messages": []})
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.size = 1  # type: ignore[misc]  # the point: assigning to a frozen field fails


def test_depth_is_checked_before_the_routing_fields_and_those_before_the_tags() -> None:
    deep: object = "x"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    too_deep = {"model": 7, "session_id": "", "messages": deep}
    assert "levels deep" in refusal(too_deep)
    assert "'model'" in refusal({"model": 7, "session_id": ""})
    assert "'session_id'" in refusal({"model": "a/b", "session_id": ""})
    assert "X-Request-Id" in refusal({"model": "a/b"}, {"x-request-id": ""})


@pytest.mark.parametrize("raw", [b"{", b"[1]", b'"a"', b"null"])
def test_a_body_that_is_not_a_json_object_is_refused(raw: bytes) -> None:
    with pytest.raises(GatewayError) as caught:
        json_object(raw)
    assert (caught.value.status, caught.value.code) == (400, "invalid_value")
    assert "JSON object" in caught.value.message


BELOW_THE_EDGE = ("gateway/routing", "gateway/relay", "gateway/upstream", "gateway/catalog")
UNTYPED_BODY = re.compile(r"\b(body|request)\s*:\s*(dict|Mapping)\[str, (Any|object)\]")


def test_no_module_below_the_edge_takes_the_body_as_a_plain_json_object() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in BELOW_THE_EDGE
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if UNTYPED_BODY.search(line)
    ]
    assert found == []
    assert UNTYPED_BODY.search("def worst_cost(body: dict[str, Any], size: int)")
