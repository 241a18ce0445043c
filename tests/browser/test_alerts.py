"""The Alerts pages in Chromium: an owner adds a rule and a webhook, copies the secret the page
shows once, sends a test event that a real receiver takes signed with it, and reads the try on
the endpoint's page. Screenshots land in docs/screenshots/."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from alerts.delivery import dispatch_due
from alerts.loop import here
from tests.alerts.conftest import loopback_allowed
from tests.browser.conftest import screenshot
from tests.gateway.conftest import World
from tests.webhook_receiver import Receiver

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
__all__ = ["loopback_allowed"]  # the fixture, shared


def test_an_owner_sets_alerts_and_sends_a_test_the_receiver_takes_signed(
    alice_in: Page, world: World, receiver: Receiver
) -> None:
    page = alice_in
    page.goto("/alerts/")
    expect(page.locator("#rules tbody tr")).to_have_count(3)  # 50, 80 and 100 % of any budget

    page.get_by_label("Kind").select_option("balance")
    page.get_by_label("Threshold").fill("25")
    page.get_by_role("button", name="Add rule").click()
    expect(page.locator(".flash.success")).to_contain_text("Rule added")
    expect(page.locator("#rules tbody tr")).to_have_count(4)

    page.get_by_label("URL").fill(receiver.url)
    page.get_by_label("Description").fill("on-call")
    page.get_by_role("button", name="Add webhook").click()
    secret = page.locator("#secret-value").inner_text()
    assert secret.startswith("whsec_")
    screenshot(page, "alerts")

    page.goto("/alerts/")
    expect(page.locator("#new-secret")).to_have_count(0)
    page.get_by_role("button", name="Send a test").click()
    expect(page.locator(".flash.success")).to_contain_text("A test event is on its way")
    assert dispatch_due(here) == 1
    page.reload()
    row = page.locator("#deliveries tbody tr")
    expect(row).to_contain_text("Delivered")
    expect(row).to_contain_text("HTTP 200")
    screenshot(page, "alert-webhook")

    (got,) = receiver.taken
    assert got.event["type"] == "test"
    assert got.signed_by(secret)
