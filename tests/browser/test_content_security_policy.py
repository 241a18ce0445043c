"""Every page works under its Content-Security-Policy (scripts from Momor's origin alone, no
inline handler): Chromium reports no violation on any page of the UI, the admin or the
management API's docs, and what inline handlers used to do still happens (a role select that
submits, the organization switcher, the menu button)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from accounts.models import Membership, Role
from tests.browser.conftest import sign_in
from tests.conftest import make_org, make_user
from tests.gateway.conftest import World

pytestmark = pytest.mark.browser

PAGES = [
    "/",
    "/keys/",
    "/provider-keys/",
    "/policy/",
    "/members/",
    "/usage/",
    "/generations/",
    "/playground/",
    "/billing/",
    "/organization/",
    "/api/manage/docs/",
    "/admin/",
    "/admin/gateway/offering/",
    "/admin/operations/",
]


@pytest.fixture
def violations(page: Page) -> Iterator[list[str]]:
    found: list[str] = []

    def note(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            found.append(f"{page.url}: {message.text}")

    page.on("console", note)
    yield found


@pytest.fixture
def operator_alice(page: Page, world: World) -> Page:
    alice = make_user("alice", world.org, Role.OWNER)
    alice.is_staff = alice.is_superuser = True
    alice.save()
    make_user("bob", world.org, Role.MEMBER)
    Membership.objects.create(user=alice, organization=make_org("globex"), role=Role.OWNER)
    sign_in(page, "alice")
    return page


def test_no_page_breaks_its_policy(operator_alice: Page, violations: list[str]) -> None:
    page = operator_alice
    for path in PAGES:
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
        if path == "/api/manage/docs/":  # Swagger UI drew the operations from the schema
            expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    assert violations == []


def test_what_the_inline_handlers_did_still_happens(
    operator_alice: Page, violations: list[str]
) -> None:
    page = operator_alice
    page.goto("/members/")
    bob = Membership.objects.get(user__username="bob")
    page.locator(f"form[action$='/members/{bob.pk}/role/'] select").select_option(Role.ADMIN)
    page.wait_for_load_state("networkidle")
    expect(page.locator("body")).to_contain_text("bob")
    bob.refresh_from_db()
    assert bob.role == Role.ADMIN

    globex = str(Membership.objects.get(organization__slug="globex").organization_id)
    page.locator("#org-switch").select_option(value=globex)
    page.wait_for_load_state("networkidle")
    expect(page.locator("#org-switch")).to_have_value(globex)

    page.set_viewport_size({"width": 600, "height": 800})
    page.locator("button.menu").click()
    expect(page.locator("#sidebar")).to_have_class(re.compile(r"\bopen\b"))
    assert violations == []
