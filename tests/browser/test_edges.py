"""The members' UI and the admin's lists with long values in them, at a laptop's width
(1280 px) and a phone's (390 px): no table or value runs past its card or the window (a long
key name, organization name, e-mail or model id wraps or is cut with an ellipsis), and the usage
charts' legend shows every series, each in a colour of its own."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, ViewportSize, expect

from accounts.invitations import invitation_send
from accounts.models import Membership, Organization, Role, SavedKey
from alerts.firing import deliveries_for
from alerts.models import AlertEvent, AlertKind, AlertRule, DeliveryAttempt, WebhookEndpoint
from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.catalog.state import STATE
from gateway.models import Provider
from tests.browser.conftest import sign_in
from tests.conftest import make_key, make_org, make_user
from tests.gateway.conftest import World, model, offer

pytestmark = pytest.mark.browser

WIDTHS: dict[str, ViewportSize] = {
    "laptop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}
EMAIL = "alexandra.konstantinopoulou-papadimitriou.platform-engineering@subsidiary.example.com"
KEY_NAME = ("nightly_evaluation_batch_runner_for_the_" * 3)[:100]
ORG_NAME = "Acme Interplanetary Logistics, Research and Extraordinarily_Long_Organization_Names"
LONG_MODEL = "acme-research-laboratories/" + "maverick-17b-128e-instruct-fp8-preview-" * 4
NINE = [f"lab/model-{letter}" for letter in "abcdefghi"]
LONG_URL = "https://hooks.subsidiary.example.com/" + "platform-engineering/alerts/" * 6 + "?t=1"

# Everything inside a card (or a stat, the sidebar, the top bar) that ends past the card's
# edge, or whose content spills out of it; content clipped or scrolled inside an element is
# reported once, at that element (a table that scrolls within its card does not fit).
SPILLS = """() => {
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className.trim()
      ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const clips = (el) => getComputedStyle(el).overflowX !== 'visible';
  const found = [];
  const boxes = '.card, .stat, .sidebar, .topbar, .messages, .auth-card, #content';
  for (const box of document.querySelectorAll(boxes)) {
    const edge = box.getBoundingClientRect();
    for (const el of box.querySelectorAll('*')) {
      let inside = false;
      for (let up = el.parentElement; up && up !== box; up = up.parentElement) {
        if (clips(up)) { inside = true; break; }
      }
      if (inside) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 && rect.height === 0) continue;
      const out = Math.max(rect.right - edge.right, edge.left - rect.left);
      const style = getComputedStyle(el);
      // An inline box's width is its text's; a field scrolls its own text; a clipped box
      // ends its text with an ellipsis.
      const own = (style.display === 'inline' || el.matches('input, textarea, select') ||
        style.overflowX === 'hidden');
      const spill = own ? 0 : el.scrollWidth - el.clientWidth;
      if (out > 1 || spill > 1) {
        found.push(`${name(box)} > ${name(el)} by ${Math.round(Math.max(out, spill))} px`);
      }
    }
  }
  const page = document.documentElement.scrollWidth - window.innerWidth;
  if (page > 0) found.push(`the page by ${page} px`);
  return found;
}"""

# The usage charts' legends: each item's text, colour and whether it lies whole inside its
# card and the window.
LEGEND = """(canvas) => {
  const card = canvas.closest('.card').getBoundingClientRect();
  return [...canvas.closest('.card').querySelectorAll('.legend li')].map((li) => {
    const r = li.getBoundingClientRect();
    const swatch = getComputedStyle(li.querySelector('.swatch')).backgroundColor;
    const whole = r.height > 0 && r.top >= card.top && r.bottom <= card.bottom &&
      r.left >= card.left && r.right <= card.right && r.right <= window.innerWidth;
    return {label: li.textContent.trim(), colour: swatch, whole};
  });
}"""


def crowded(world: World) -> str:
    """acme, renamed long, with a long-named key, a member and an invitation with long
    addresses, a saved key with a long label, and calls to nine models, one with a long id,
    and to a long model id nobody serves. The owner's username is a long e-mail; returns it."""
    Organization.objects.filter(pk=world.org.pk).update(name=ORG_NAME)
    owner = make_user(EMAIL, world.org, Role.OWNER)
    other = make_org("globex")
    Organization.objects.filter(pk=other.pk).update(name=ORG_NAME.replace("Acme", "Globex"))
    Membership.objects.create(user=owner, organization=other, role=Role.MEMBER)
    make_user("b" + EMAIL, world.org, Role.MEMBER)
    make_key(world.org, name=KEY_NAME, created_by=owner)
    saved = SavedKey(organization=world.org, provider="openai", label=KEY_NAME)
    saved.set_secret("sk-upstream-0123456789")
    saved.save()
    invitation_send(
        organization=world.org,
        email="c" + EMAIL,
        role=Role.MEMBER,
        invited_by=owner,
        link_for=lambda token: f"{world.url}/invitations/{token}/",
    )
    openai = Provider.objects.get(name="openai")
    for name in [*NINE, LONG_MODEL]:
        offer(model(name, released=date(2025, 6, 1)), openai, "gpt-5", "1", "2")
    STATE.rebuild_catalog()
    alerted(world.org)
    for name in [*NINE, LONG_MODEL, LONG_MODEL + "-unserved"]:
        world.post({"model": name, "messages": [{"role": "user", "content": "Hi"}]})
    assert drain()
    return EMAIL


def alerted(org: Organization) -> None:
    """A webhook with a long URL and description, and an event whose delivery failed with a
    long answer and is waiting for its next try."""
    hook = WebhookEndpoint(organization=org, url=LONG_URL, description=KEY_NAME)
    hook.set_secret("whsec_crowded")
    hook.save()
    AlertRule.objects.create(organization=org, kind=AlertKind.BALANCE, threshold=Decimal(1_000_000))
    event = AlertEvent.objects.create(
        organization=org, type="balance.low", key="crowded", summary=("Balance low " * 20)[:300],
        data={"balance": "1.000000000", "threshold": "1000000.000000000"},
    )  # fmt: skip
    (delivery,) = deliveries_for(event, email=True, endpoint_ids=[hook.pk])[:1]
    delivery.attempts = 1
    delivery.next_attempt_at = timezone.now() + timedelta(hours=1)
    delivery.save()
    DeliveryAttempt.objects.create(
        delivery=delivery, number=1, status_code=502, answer="<html>" + "x" * 1900, duration_ms=3
    )


def member_pages() -> list[str]:
    served = Generation.objects.filter(model=LONG_MODEL).get()
    refused = Generation.objects.filter(model="").first()
    assert refused is not None
    return [
        "/",
        "/playground/",
        "/generations/",
        f"/generations/{served.request_id}/",
        f"/generations/{refused.request_id}/",
        "/usage/",
        "/usage/?split=provider",
        "/usage/?split=app",
        "/keys/",
        "/provider-keys/",
        "/policy/",
        "/members/",
        "/billing/",
        "/organization/",
        "/accounts/password_change/",
        "/audit/",
        "/sso/",
        "/alerts/",
        f"/alerts/webhooks/{WebhookEndpoint.objects.get(url=LONG_URL).pk}/",
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_table_or_long_value_runs_past_its_card(page: Page, world: World, width: str) -> None:
    sign_in(page, crowded(world))
    page.set_viewport_size(WIDTHS[width])
    spills = {}
    for path in member_pages():
        page.goto(path)
        found = page.evaluate(SPILLS)
        if found:
            spills[path] = found
    assert spills == {}, "\n".join(f"{path}: {found}" for path, found in spills.items())


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sign_in_pages_fit(page: Page, world: World, width: str) -> None:
    page.set_viewport_size(WIDTHS[width])
    spills = {}
    for path in ["/accounts/login/", "/accounts/password_reset/", "/no-such-page/"]:
        page.goto(path)
        found = page.evaluate(SPILLS)
        if found:
            spills[path] = found
    assert spills == {}


@pytest.mark.parametrize("width", WIDTHS)
def test_an_invitation_to_a_long_named_organization_fits(
    page: Page, world: World, width: str
) -> None:
    crowded(world)
    links: list[str] = []

    def link_for(token: str) -> str:
        links.append(f"/invitations/{token}/")
        return links[-1]

    invitation_send(
        organization=Organization.objects.get(pk=world.org.pk),
        email="d" + EMAIL,
        role=Role.MEMBER,
        invited_by=User.objects.get(username=EMAIL),
        link_for=link_for,
    )
    page.set_viewport_size(WIDTHS[width])
    page.goto(links[0])
    expect(page.locator(".auth-card h1")).to_contain_text("Join Acme Interplanetary")
    assert page.evaluate(SPILLS) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_usage_legend_shows_every_series_in_a_colour_of_its_own(
    page: Page, world: World, width: str
) -> None:
    sign_in(page, crowded(world))
    page.set_viewport_size(WIDTHS[width])
    page.goto("/usage/")
    for canvas in page.locator("canvas[data-metric]").all():
        expect(canvas).to_have_attribute("data-drawn", "true")
        items = canvas.evaluate(LEGEND)
        labels = [item["label"] for item in items]
        assert len(labels) == 11 and set(NINE) <= set(labels), labels
        assert [item["label"] for item in items if not item["whole"]] == []
        colours = [item["colour"] for item in items]
        assert len(set(colours)) == len(colours), colours


def test_past_eleven_series_the_least_called_are_drawn_as_one(page: Page, world: World) -> None:
    sign_in(page, crowded(world))
    openai = Provider.objects.get(name="openai")
    for name in ["lab/model-j", "lab/model-k"]:
        offer(model(name, released=date(2025, 6, 1)), openai, "gpt-5", "1", "2")
    STATE.rebuild_catalog()
    for name in ["lab/model-j", "lab/model-k", *NINE]:  # the nine are called twice
        world.post({"model": name, "messages": [{"role": "user", "content": "Hi"}]})
    assert drain()
    page.goto("/usage/")
    canvas = page.locator("#chart-calls")
    expect(canvas).to_have_attribute("data-drawn", "true")
    items = canvas.evaluate(LEGEND)
    assert len(items) == 11  # the nine, one of the four called once, and the other three
    assert {item["label"] for item in items[:9]} == set(NINE)
    assert items[-1]["label"] == "3 others"
    assert len({item["colour"] for item in items}) == 11
    datasets = page.evaluate(
        "() => Chart.getChart(document.getElementById('chart-calls')).data.datasets"
        ".map(set => set.data.reduce((sum, value) => sum + value, 0))"
    )
    assert datasets[-1] == 3


def admin_in(page: Page) -> None:
    User.objects.create_superuser("root", "root@example.com", "root-pass-123!")
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("root-pass-123!")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_contain_text("Momor administration")


ADMIN_LISTS = [
    "/admin/gateway/offering/",
    "/admin/gateway/model/",
    "/admin/gateway/provider/",
    "/admin/accounts/organization/",
    "/admin/accounts/apikey/",
    "/admin/accounts/savedkey/",
    "/admin/accounts/membership/",
    "/admin/accounts/invitation/",
    "/admin/auth/user/",
    "/admin/billing/generation/",
    "/admin/billing/ledgerentry/",
    "/admin/accounts/budget/",
    "/admin/alerts/alertevent/",
    "/admin/alerts/delivery/",
    "/admin/alerts/webhookendpoint/",
]

# How far a changelist's table runs past its box (which then scrolls).
LIST_SPILL = """() => {
  const box = document.querySelector('#changelist-form .results');
  return box ? box.scrollWidth - box.clientWidth : 0;
}"""


def test_the_admin_lists_fit_a_laptop_with_long_values(page: Page, world: World) -> None:
    crowded(world)
    admin_in(page)
    page.set_viewport_size(WIDTHS["laptop"])
    spills = {}
    for path in ADMIN_LISTS:
        page.goto(path)
        spill = page.evaluate(LIST_SPILL)
        if spill > 0:
            spills[path] = spill
    assert spills == {}


@pytest.mark.parametrize("width", WIDTHS)
def test_the_admin_pages_never_run_past_the_window(page: Page, world: World, width: str) -> None:
    crowded(world)
    admin_in(page)
    page.set_viewport_size(WIDTHS[width])
    pages = {}
    for path in ["/admin/", "/admin/operations/", *ADMIN_LISTS]:
        page.goto(path)
        spill = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        if spill > 0:
            pages[path] = spill
    assert pages == {}
