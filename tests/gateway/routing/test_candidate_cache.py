"""Calls that route alike reuse one candidate list, and never one made from state that has
changed since: a key saved, a policy set or an offering disabled between two identical calls
routes the second on the new state."""

from __future__ import annotations

from gateway.models import Offering
from tests.gateway.calls import (
    ask,
    save_key,
    sent,
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World


def test_a_key_saved_between_two_identical_calls_serves_the_second(world: World) -> None:
    assert world.post(ask()).status_code == 200
    assert sent(world.fake, "gpt-5")["headers"]["authorization"] == f"Bearer {MOMOR_UPSTREAM_KEY}"
    save_key(world.org, "openai", "sk-own-0123456789abcdef")
    settle()
    world.fake.reset()
    assert world.post(ask()).status_code == 200
    assert sent(world.fake, "gpt-5")["headers"]["authorization"] == "Bearer sk-own-0123456789abcdef"


def test_an_offering_disabled_between_two_identical_calls_is_not_tried(world: World) -> None:
    assert world.post(ask()).status_code == 200
    assert tried(world.fake) == ["gpt-5"]
    offering = Offering.objects.get(upstream_id="gpt-5")
    offering.enabled = False
    offering.save()
    settle()
    world.fake.reset()
    assert world.post(ask()).status_code == 200
    assert "gpt-5" not in tried(world.fake)


def test_a_zdr_hold_set_between_two_identical_calls_holds_the_second(world: World) -> None:
    assert world.post(ask()).status_code == 200
    assert tried(world.fake) == ["gpt-5"]  # openai, whose agreement keeps data
    world.org.zdr_hold = True
    world.org.save()
    settle()
    world.fake.reset()
    assert world.post(ask()).status_code == 200
    assert tried(world.fake) == ["gpt-5-azure-eu"]
