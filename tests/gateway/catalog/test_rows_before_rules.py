"""A catalog row written before the catalog's rules (or behind the admin's back) with one name
as a string where a list belongs is read as that name, never as its letters."""

from __future__ import annotations

from django.utils import timezone

from gateway.models import Model
from tests.gateway.calls import ask, error_of, settle, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World


def test_a_tier_stored_as_a_string_is_one_tier_not_its_letters(world: World) -> None:
    Model.objects.filter(id="openai/gpt-5").update(tiers="frontier", updated_at=timezone.now())
    settle()
    error_of(world.post(ask("tier/f")), 404, "model_not_found")
    response = world.post(ask("tier/frontier"))
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "openai/gpt-5"
