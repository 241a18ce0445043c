"""The values an adapter pastes into a provider's URL (a Vertex project and location, a model
id) each stay in their own path segment: quoted, and `.` or `..` refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.providers.contract import Target, segment, segments
from gateway.providers.gemini import GeminiAdapter
from gateway.providers.vertex import model_url

BASE = "https://aiplatform.example/v1"


def target(**fields: str) -> Target:
    made = Target(BASE, "t", "google/x", "gemini-x", project="momor-test")
    return replace(made, **fields)  # type: ignore[arg-type]  # str fields alone


def test_a_vertex_url_is_made_of_its_values_as_they_are() -> None:
    assert model_url(target(region="europe-west4")) == (
        f"{BASE}/projects/momor-test/locations/europe-west4/publishers/google/models/gemini-x"
    )
    assert model_url(target(project="example.com:momor-test")).startswith(
        f"{BASE}/projects/example.com:momor-test/locations/global/"
    )


@pytest.mark.parametrize("field", ["project", "region", "upstream_id"])
def test_a_vertex_value_never_leaves_its_segment(field: str) -> None:
    url = model_url(target(**{field: "a/b?c#d%e"}))
    assert "a%2Fb%3Fc%23d%25e" in url
    assert "?" not in url and "#" not in url


@pytest.mark.parametrize("value", ["", ".", ".."])
def test_a_dot_segment_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="cannot be a segment"):
        segment(value)
    with pytest.raises(ValueError, match="cannot be a segment"):
        model_url(target(upstream_id=value or "."))


def test_a_gemini_model_id_may_span_segments_but_not_climb() -> None:
    assert segments("tunedModels/my-model") == "tunedModels/my-model"
    with pytest.raises(ValueError, match="cannot be a segment"):
        segments("../../files/x")
    prepared = GeminiAdapter().prepare({"messages": []}, target(upstream_id="gemini-x?key=1"))
    assert prepared.url.startswith(f"{BASE}/models/gemini-x%3Fkey%3D1:")
