"""A Messages call as Anthropic's adapter sends it natively, pure: the body as written but for
the model, Anthropic's version (the client's, else the adapter's) and betas as sent, the key in
x-api-key; the token count's request and answer."""

from __future__ import annotations

import orjson
import pytest

from gateway.providers.anthropic import API_VERSION, AnthropicAdapter
from gateway.providers.contract import Target

TARGET = Target(
    base_url="https://api.anthropic.test",
    secret="sk-ant-1",
    model_id="anthropic/claude-sonnet-4-5",
    upstream_id="claude-sonnet-4-5-20250929",
)
BODY = {
    "max_tokens": 100,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "hi"}],
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "some_new_field": {"kept": True},
}


def test_the_body_goes_as_written_but_for_the_model() -> None:
    sent = AnthropicAdapter().prepare_native(
        BODY, {"anthropic-beta": "b-1,b-2", "anthropic-version": "2024-01-01"}, TARGET
    )
    assert sent.url == "https://api.anthropic.test/v1/messages"
    assert orjson.loads(sent.body) == {**BODY, "model": "claude-sonnet-4-5-20250929"}
    assert sent.headers == {
        "x-api-key": "sk-ant-1",
        "anthropic-version": "2024-01-01",
        "anthropic-beta": "b-1,b-2",
        "content-type": "application/json",
    }


def test_without_the_clients_headers_it_sends_its_version_and_no_beta() -> None:
    sent = AnthropicAdapter().prepare_native(BODY, {}, TARGET)
    assert sent.headers["anthropic-version"] == API_VERSION
    assert "anthropic-beta" not in sent.headers


def test_a_token_count_goes_to_count_tokens() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    sent = AnthropicAdapter().prepare_count(body, {}, TARGET)
    assert sent.url == "https://api.anthropic.test/v1/messages/count_tokens"
    assert orjson.loads(sent.body) == {**body, "model": "claude-sonnet-4-5-20250929"}


def test_a_count_is_read() -> None:
    assert AnthropicAdapter().input_tokens(b'{"input_tokens": 42}') == 42


@pytest.mark.parametrize("data", [b"[]", b'{"tokens": 3}', b"not json"])
def test_an_answer_that_is_no_count_cannot_be_read(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"."):
        AnthropicAdapter().input_tokens(data)
