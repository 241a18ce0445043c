"""Headless Chromium (Debian's package) driven by Playwright against the real Momor server of
tests/server_fixture.py, with acme's catalog on the fake upstream (tests/gateway/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from accounts.models import Role
from tests.conftest import make_user
from tests.gateway.conftest import World, world  # noqa: F401 - the fixture, shared

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    # Sync Playwright keeps an event loop on the main thread, which Django takes for an async
    # context; the tests' own ORM calls are plain synchronous ones, so the guard is lifted.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as driver:
        yield driver
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    yield chromium
    chromium.close()


@pytest.fixture
def page(browser: Browser, world: World) -> Iterator[Page]:  # noqa: F811 - the world fixture, imported above
    context = browser.new_context(
        base_url=world.url, viewport={"width": 1360, "height": 860}, device_scale_factor=1
    )
    context.set_default_timeout(10_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def alice_in(page: Page, world: World) -> Page:  # noqa: F811 - the world fixture, imported above
    """Alice, owner of acme, signed in through the sign-in form."""
    make_user("alice", world.org, Role.OWNER)
    sign_in(page, "alice")
    return page


def sign_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-pass-123!")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".topbar h1")).to_be_visible()


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
