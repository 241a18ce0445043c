"""The pages as someone new to Momor finds them, in headless Chromium at a laptop's width
(1280 px): the usage page says what it covers, the playground starts on a model that answers and
says what each reply cost, money and dates read one way, refused calls name what they asked
for, long names and dates stay on one line, the admin's lists fit and the error pages are
Momor's own. Screenshots land in docs/screenshots/."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.views.defaults import server_error
from playwright.sync_api import Page, ViewportSize, expect

from accounts.models import ApiKey
from billing.ledger.posting import ledger_post
from billing.models import EntryKind
from billing.recording.hand_off import drain
from gateway.catalog.state import STATE
from gateway.models import Provider
from tests.browser.conftest import screenshot
from tests.conftest import make_key
from tests.gateway.conftest import World

pytestmark = pytest.mark.browser

LAPTOP: ViewportSize = {"width": 1280, "height": 800}
HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}

# Lines a text node's contents fall on: more than one when it wraps.
LINES = """(el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const rects = [...range.getClientRects()].filter(r => r.width > 0);
  return new Set(rects.map(r => Math.round(r.top))).size;
}"""

# Column headers of a changelist that end past the right edge of the list's box (which then
# scrolls) or of the window.
CUT_COLUMNS = """() => {
  const box = document.querySelector('#changelist-form .results').getBoundingClientRect();
  const edge = Math.min(box.right, window.innerWidth) + 1;
  return [...document.querySelectorAll('#result_list thead th')]
    .filter(th => th.getBoundingClientRect().right > edge)
    .map(th => th.textContent.trim());
}"""


def lines_of(page: Page, selector: str) -> list[int]:
    return [cell.evaluate(LINES) for cell in page.locator(selector).all()]


def test_the_usage_page_says_what_it_covers_and_fills_its_rows(
    alice_in: Page, world: World
) -> None:
    assert world.post(HELLO).status_code == 200
    assert drain()
    page = alice_in
    page.set_viewport_size(LAPTOP)
    page.goto("/usage/")
    period = page.locator('select[name="days"]')
    expect(period).to_have_value("30")
    assert period.evaluate("s => s.options[s.selectedIndex].text") == "Last 30 days"
    expect(page.locator(".lede")).to_contain_text("per day")
    grid = page.locator(".grid.charts").bounding_box()
    assert grid is not None
    rows: dict[int, float] = {}
    for card in page.locator(".chart-card").all():
        box = card.bounding_box()
        assert box is not None
        rows[round(box["y"])] = max(rows.get(round(box["y"]), 0), box["x"] + box["width"])
    assert len(rows) == 2
    for right in rows.values():
        assert abs(right - (grid["x"] + grid["width"])) <= 1, "a row of charts is half empty"
    expect(page.locator("#chart-cost")).to_have_attribute("data-drawn", "true")
    ticks = page.evaluate(
        "() => Chart.getChart(document.getElementById('chart-cost')).scales.y.ticks"
        ".map(t => t.label)"
    )
    assert len({len(tick) for tick in ticks}) == 1, f"cost ticks of mixed widths: {ticks}"
    assert all(tick.startswith("$") for tick in ticks)


def test_the_playground_starts_on_a_model_that_answers_and_tells_the_cost(
    alice_in: Page, world: World
) -> None:
    world.fake.script("gpt-5-mini", text="Cheap and quick.", chunks=3)
    page = alice_in
    page.set_viewport_size(LAPTOP)
    page.goto("/playground/")
    picker = page.get_by_label("Model or selector")
    expect(picker).to_have_value("auto")
    expect(page.locator("#pg-model-help")).to_contain_text("no key")
    page.get_by_label("Your message").fill("Say something cheap")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.assistant[data-done]")).to_be_visible()
    expect(page.locator(".msg.assistant .body")).to_have_text("Cheap and quick.")
    facts = page.locator(".msg.assistant .reply-facts")
    expect(facts).to_contain_text(" tokens")
    expect(facts).to_contain_text("$0.0000")
    expect(facts).to_have_text(
        re.compile(r"^\d+ → \d+ tokens · \$0\.\d{2,6} · [\d.]+ (ms|s) \(first token")
    )
    screenshot(page, "playground-reply-facts")


def test_a_model_without_a_key_is_marked_and_cannot_be_picked(alice_in: Page, world: World) -> None:
    from tests.gateway.conftest import model, offer, provider

    keyless = provider("lab", "openai", f"{world.fake.url}/lab/v1", key="")
    offer(model("lab/unkeyed", tiers=["lab"]), keyless, "unkeyed", "0.01", "0.01")
    STATE.rebuild_catalog()
    page = alice_in
    page.goto("/playground/")
    option = page.locator('#pg-model option[value="lab/unkeyed"]')
    expect(option).to_have_text("lab/unkeyed (no key)")
    expect(option).to_be_disabled()
    expect(page.locator('#pg-model option[value="tier/lab"]')).to_be_disabled()
    expect(page.locator('#pg-model option[value="openai/gpt-5"]')).to_be_enabled()


def test_a_fresh_install_without_keys_says_so_instead_of_failing(
    alice_in: Page, world: World
) -> None:
    for row in Provider.objects.all():
        row.set_key("")
        row.key_env = ""
        row.save()
    STATE.rebuild_catalog()
    page = alice_in
    page.set_viewport_size(LAPTOP)
    page.goto("/playground/")
    expect(page.locator("#pg-nothing-runs")).to_contain_text("No model can answer yet")
    expect(page.locator("#pg-nothing-runs").get_by_role("link")).to_have_text("Save a provider key")
    assert page.locator("#pg-model option:enabled").count() == 0
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    screenshot(page, "playground-no-key")


@pytest.mark.parametrize(
    ("api", "kind"),
    [
        ("Chat Completions", "Error · HTTP 500 · server_error"),
        ("Messages", "Error · HTTP 500 · api_error"),
    ],
    ids=["chat", "messages"],
)
def test_a_failed_reply_leaves_the_error_and_no_empty_bubble(
    alice_in: Page, world: World, api: str, kind: str
) -> None:
    """The error reads as the API wrote it: its message, its status and its kind (OpenAI's
    code or Anthropic's error type)."""
    world.fake.script("mistral-small-latest", fail={"status": 500})
    page = alice_in
    page.goto("/playground/")
    page.get_by_label(api, exact=True).check()
    page.get_by_label("Model or selector").select_option("mistral/mistral-small")
    page.get_by_label("Your message").fill("Will this fail?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.error .who")).to_have_text(kind)
    expect(page.locator(".msg.error .body")).not_to_be_empty()
    expect(page.locator(".msg.assistant")).to_have_count(0)
    expect(page.locator("#pg-meta")).not_to_contain_text("Waiting")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def test_money_dates_and_refused_calls_read_one_way(alice_in: Page, world: World) -> None:
    assert world.post(HELLO).status_code == 200
    refused = world.post({**HELLO, "model": "nobody/nothing"})
    assert refused.status_code == 404
    assert drain()
    page = alice_in
    page.set_viewport_size(LAPTOP)
    page.goto("/generations/")
    table = page.locator("#generations-table")
    expect(table.locator(".requested")).to_have_text("nobody/nothing")
    expect(table).not_to_contain_text("(none)")
    costs = table.locator("td.num:last-child").all_inner_texts()
    assert all(cost.startswith("$") and len(cost.split(".")[1]) in range(2, 7) for cost in costs)
    assert set(lines_of(page, "#generations-table td.when")) == {1}
    screenshot(page, "generations-refused")
    page.goto("/usage/")
    expect(page.locator("table")).to_contain_text("nobody/nothing (not served)")
    page.goto("/")
    balance = page.locator(".stat strong").first.inner_text()
    assert balance.startswith("$99.99") and "." in balance
    assert page.locator(".stat strong").nth(2).inner_text().startswith("$0.0000")
    expect(page.locator("table")).to_contain_text("nobody/nothing")


def test_long_key_names_and_dates_stay_on_one_line(alice_in: Page, world: World) -> None:
    for name in ["production-backend-service-eu-west-1", "nightly-evaluation-batch-runner"]:
        make_key(world.org, name=name)
    first = ApiKey.objects.first()
    assert first is not None
    ApiKey.objects.update(last_used_at=first.created_at)
    page = alice_in
    page.set_viewport_size(LAPTOP)
    page.goto("/keys/")
    assert set(lines_of(page, "#keys-table td.key-name strong")) == {1}
    assert set(lines_of(page, "#keys-table td.when")) == {1}
    long_name = page.locator("#keys-table td.key-name strong", has_text="production")
    expect(long_name).to_have_attribute("title", "production-backend-service-eu-west-1")
    screenshot(page, "api-keys-laptop")


def admin_in(page: Page) -> Page:
    User.objects.create_superuser("root", "root@example.com", "root-pass-123!")
    page.set_viewport_size(LAPTOP)
    page.goto("/admin/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("root-pass-123!")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_contain_text("Momor administration")
    return page


def test_the_admin_is_momors_and_its_lists_fit_a_laptop(page: Page, world: World) -> None:
    assert world.post(HELLO).status_code == 200
    assert drain()
    admin_in(page)
    expect(page).to_have_title("Catalog, organizations and records | Momor admin")
    expect(page.get_by_role("link", name="API keys", exact=True)).to_be_visible()
    expect(page.get_by_text("Api keys", exact=True)).to_have_count(0)
    screenshot(page, "admin")
    lists = {
        "/admin/gateway/offering/": ["Prompt $/M", "Completion $/M", "Cache", "Enabled"],
        "/admin/gateway/provider/": ["Momor key stored", "Stored key", "ZDR"],
        "/admin/accounts/apikey/": ["Revoked", "Credit limit", "Rate limit"],
        "/admin/billing/generation/": ["Cost", "Created at"],
        "/admin/billing/ledgerentry/": ["Balance after", "Created by"],
    }
    for path, columns in lists.items():
        page.goto(path)
        assert page.evaluate(CUT_COLUMNS) == [], f"{path} cuts columns at 1280 px"
        headers = page.locator("#result_list thead th").all_inner_texts()
        assert headers, f"{path} lists nothing"
        for column in columns:
            assert any(column.lower() in h.lower() for h in headers), f"{column} not on {path}"
        expect(page.locator("#changelist-search")).to_be_visible()
        expect(page.locator("#changelist-filter")).to_be_visible()
    page.goto("/admin/gateway/offering/")
    expect(page.locator("#result_list")).to_contain_text("1.25")
    expect(page.locator("#result_list")).not_to_contain_text("1.250000000")
    screenshot(page, "admin-offerings")
    page.goto("/admin/gateway/provider/")
    screenshot(page, "admin-providers")


def test_the_error_pages_are_momors(alice_in: Page, world: World) -> None:
    page = alice_in
    page.set_viewport_size(LAPTOP)
    response = page.goto("/generations/no-such-request/")
    assert response is not None and response.status == 404
    expect(page.locator(".auth-card h1")).to_have_text("Page not found")
    expect(page.locator(".brand")).to_contain_text("Momor")
    screenshot(page, "not-found")
    failure = server_error(RequestFactory().get("/"))
    assert failure.status_code == 500
    page.set_content(failure.content.decode())
    expect(page.locator(".auth-card h1")).to_have_text("Something went wrong")
    background = page.locator(".auth-wrap").evaluate("el => getComputedStyle(el).backgroundImage")
    assert "gradient" in background  # Momor's stylesheet, not the browser's defaults
    screenshot(page, "server-error")


def test_a_balance_of_a_fraction_of_a_cent_is_shown_to_the_millionth(
    alice_in: Page, world: World
) -> None:
    ledger_post(organization_id=world.org.pk, kind=EntryKind.CHARGE, amount=Decimal("-0.0000392"))
    page = alice_in
    page.goto("/billing/")
    expect(page.locator("#balance")).to_have_text("$99.999961")
    expect(page.locator(".stat.big em")).to_have_text("99.999960800 USD exactly")
