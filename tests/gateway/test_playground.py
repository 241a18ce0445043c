"""The playground page (gateway.playground): the catalog's models and selectors, and the CSRF
cookie its calls need."""

from __future__ import annotations

import pytest

from gateway.models import Model
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db


def test_the_playground_lists_models_and_selectors(alice, acme) -> None:  # type: ignore[no-untyped-def]
    Model.objects.create(id="openai/gpt-5", tiers=["high"], auto=True)
    response = signed_in(alice).get("/playground/")
    assert response.context["models"] == ["openai/gpt-5"]
    assert response.context["selectors"] == ["auto", "tier/high"]
    assert "csrftoken" in response.cookies
