"""read_options, pure: the four routing fields read once, every unreadable value refused with
400 invalid_value, every other field left in the body."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gateway.request.errors import GatewayError
from gateway.request.options import ProviderPrefs, read_options, strip_routing

PLACES = frozenset({"openai", "azure", "azure@eu", "mistral"})


def refused(body: dict[str, Any]) -> GatewayError:
    with pytest.raises(GatewayError) as caught:
        read_options(body, PLACES)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "invalid_value", None)
    return error


def test_it_reads_model_then_models_as_selectors() -> None:
    options = read_options({"model": ["a/b", " tier/x "], "models": "auto"}, PLACES)
    assert options.selectors == ("a/b", "tier/x", "auto")
    assert options.stream is False
    assert options.include_usage is False
    assert options.prefs == ProviderPrefs()


def test_it_reads_the_provider_preferences() -> None:
    options = read_options(
        {
            "model": "a/b",
            "provider": {
                "order": ["Azure@EU", "openai"],
                "ignore": ["mistral"],
                "sort": "price",
                "zdr": True,
                "deprecated": True,
                "maxAge": "P6M",
                "unknown": {"ignored": True},
            },
        },
        PLACES,
    )
    assert options.prefs == ProviderPrefs(
        order=("azure@eu", "openai"),
        ignore=frozenset({"mistral"}),
        zdr=True,
        deprecated=True,
        max_age=timedelta(days=180),
        max_age_given=True,
    )


def test_it_reads_stream_and_include_usage() -> None:
    options = read_options(
        {"model": "a/b", "stream": True, "stream_options": {"include_usage": True}}, PLACES
    )
    assert (options.stream, options.include_usage) == (True, True)
    options = read_options({"model": "a/b", "stream_options": {"include_usage": 1}}, PLACES)
    assert options.include_usage is False


def test_deprecated_left_out_or_null_is_the_organization_default() -> None:
    assert read_options({"model": "a", "provider": {}}, PLACES).prefs.deprecated is None
    body = {"model": "a", "provider": {"deprecated": None}}
    assert read_options(body, PLACES).prefs.deprecated is None


@pytest.mark.parametrize("zdr", ["true", 1, None, [], {}])
def test_a_non_boolean_zdr_is_refused_in_the_spec_words(zdr: Any) -> None:
    error = refused({"model": "a", "provider": {"zdr": zdr}})
    assert error.message == "'provider.zdr' must be a boolean"


@pytest.mark.parametrize("stream", ["true", 1, None])
def test_a_non_boolean_stream_is_refused(stream: Any) -> None:
    assert refused({"model": "a", "stream": stream}).message == "'stream' must be a boolean"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"model": None},
        {"model": []},
        {"model": ""},
        {"model": 3},
        {"model": ["a", 3]},
        {"model": ["a", " "]},
        {"model": "a", "models": {"x": 1}},
        {"model": "a", "provider": []},
        {"model": "a", "provider": {"order": "openai"}},
        {"model": "a", "provider": {"order": ["nowhere"]}},
        {"model": "a", "provider": {"ignore": ["azure@mars"]}},
        {"model": "a", "provider": {"sort": "fastest"}},
        {"model": "a", "provider": {"maxAge": 180}},
        {"model": "a", "provider": {"maxAge": "half a year"}},
        {"model": "a", "provider": {"deprecated": "no"}},
    ],
)
def test_an_unreadable_routing_field_is_refused(body: dict[str, Any]) -> None:
    refused(body)


def test_strip_routing_takes_off_model_models_and_provider_alone() -> None:
    body = {"model": "a", "models": ["b"], "provider": {}, "stream": True, "x": 1}
    assert strip_routing(body) == {"stream": True, "x": 1}
    assert body["model"] == "a"  # the caller's body is left as it was
