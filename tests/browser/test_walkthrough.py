"""A person's walk through the members' UI in headless Chromium, against a real Momor serving
calls from the fake upstream. Screenshots of the main pages land in docs/screenshots/."""

from __future__ import annotations

import re
import time
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from accounts.models import ApiKey, SavedKey
from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.models import Model, Provider
from testkit.fake_embeddings import DEFAULT_DIMENSIONS, embedding_vector
from tests.browser.conftest import screenshot, sign_in
from tests.gateway.calls import settle
from tests.gateway.conftest import World, offer
from tests.gateway.edge.messages_world import SONNET, SONNET_ID, add_anthropic

pytestmark = pytest.mark.browser

HELLO = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "Hello"}]}
EMBEDDING = "openai/text-embedding-3-small"


def nav(page: Page, name: str) -> None:
    page.locator("#sidebar nav").get_by_role("link", name=name).click()


def calls_with(world: World, key: str) -> int:
    return world.post(HELLO, key=key).status_code


def test_sign_in_shows_the_overview(page: Page, world: World) -> None:
    from accounts.models import Role
    from tests.conftest import make_user

    make_user("alice", world.org, Role.OWNER)
    page.goto("/")
    expect(page).to_have_url(f"{world.url}/accounts/login/?next=/")
    screenshot(page, "sign-in")
    sign_in(page, "alice")
    expect(page.locator(".topbar h1")).to_have_text("Acme")
    expect(page.locator(".stat").first).to_contain_text("$100.00")
    screenshot(page, "overview")


def test_create_a_key_use_it_and_revoke_it(alice_in: Page, world: World) -> None:
    page = alice_in
    nav(page, "API keys")
    page.get_by_label("Name").fill("ci")
    page.get_by_label("Credit limit (USD)").fill("5")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#secret-value").inner_text().strip()
    assert secret.startswith("sk-momor-")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    screenshot(page, "api-keys")
    assert calls_with(world, secret) == 200

    page.once("dialog", lambda dialog: dialog.accept())
    row = page.locator("#keys-table tr", has_text="ci")
    row.get_by_role("button", name="Revoke").click()
    expect(row.locator(".badge")).to_have_text("Revoked")
    assert ApiKey.objects.get(name="ci").revoked_at is not None
    deadline = time.monotonic() + 5
    while calls_with(world, secret) != 401:
        assert time.monotonic() < deadline, "the gateway still takes the revoked key"
        time.sleep(0.2)


def test_save_a_provider_key_and_change_the_policy(alice_in: Page, world: World) -> None:
    page = alice_in
    nav(page, "Provider keys")
    page.get_by_label("Provider").select_option("azure@eu")
    page.get_by_label("Key", exact=True).fill("azure-eu-secret-0042")
    page.get_by_label("Zero data retention").check()
    page.get_by_role("button", name="Save key").click()
    expect(page.locator(".flash.success")).to_contain_text("azure@eu")
    expect(page.locator("#saved-keys")).to_contain_text("••••0042")
    assert "azure-eu-secret" not in page.content()
    saved = SavedKey.objects.get(organization=world.org)
    assert (saved.provider, saved.zdr, saved.secret) == ("azure@eu", True, "azure-eu-secret-0042")
    screenshot(page, "provider-keys")

    nav(page, "Policy")
    page.get_by_label("Hold every call to zero data retention").check()
    page.get_by_label("Maximum model age").fill("P6M")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator(".flash.success")).to_contain_text("Policy saved")
    expect(page.get_by_label("Maximum model age")).to_have_value("P180D")
    world.org.refresh_from_db()
    assert world.org.zdr_hold is True
    screenshot(page, "policy")


def test_the_usage_chart_is_drawn_from_recorded_generations(alice_in: Page, world: World) -> None:
    for model in ["openai/gpt-5", "openai/gpt-5", "mistral/mistral-small"]:
        assert world.post({**HELLO, "model": model}).status_code == 200
    assert drain()
    assert Generation.objects.filter(organization=world.org).count() == 3
    page = alice_in
    nav(page, "Usage")
    canvas = page.locator("#chart-calls")
    expect(canvas).to_have_attribute("data-drawn", "true")
    drawn = page.evaluate(
        """() => {
          const chart = Chart.getChart(document.getElementById('chart-calls'));
          return chart.data.datasets.map(d => [d.label, d.data.reduce((a, b) => a + b, 0)]);
        }"""
    )
    assert sorted(drawn) == [["mistral/mistral-small", 1], ["openai/gpt-5", 2]]
    box = canvas.bounding_box()
    assert box is not None and box["height"] > 100
    screenshot(page, "usage")
    nav(page, "Generations")
    page.locator("#generations-table a").first.click()
    expect(page.locator("#attempts")).to_contain_text("Momor's key")
    screenshot(page, "generation")


def test_the_playground_streams_an_answer(alice_in: Page, world: World) -> None:
    """Chat Completions first; then the same conversation goes on over Messages, to Claude on
    Anthropic; then two texts are embedded. Each answer shows what it took and its request id,
    linked to its record, and each call is recorded with its API, for alice and no key."""
    add_anthropic(world)
    embedder = Model.objects.create(id=EMBEDDING, kind="embedding")
    offer(embedder, Provider.objects.get(name="openai"), "text-embedding-3-small", "1", "0")
    settle()
    world.fake.script("gpt-5", text="Streams arrive piece by piece.", chunks=6, chunk_delay=0.1)
    page = alice_in
    nav(page, "Playground")
    page.get_by_label("Model or selector").select_option("openai/gpt-5")
    page.get_by_label("Your message").fill("Tell me about streams")
    page.get_by_role("button", name="Send").click()
    answer = page.locator(".msg.assistant .body")
    expect(answer).to_have_class("body streaming")
    expect(page.locator(".msg.assistant[data-done]")).to_be_visible()
    expect(answer).to_have_text("Streams arrive piece by piece.")
    expect(page.locator("#pg-meta")).to_contain_text("openai")
    screenshot(page, "playground")
    assert drain()
    recorded = Generation.objects.get(organization=world.org, user__username="alice")
    assert (recorded.streamed, recorded.api_key, recorded.api) == (True, None, "chat")

    the_conversation_goes_on_over_messages(page, world)
    texts_are_embedded(page, world)


def options_of(page: Page) -> list[str]:
    values: list[str] = page.locator("#pg-model option").evaluate_all(
        "options => options.map(o => o.value)"
    )
    return values


def the_conversation_goes_on_over_messages(page: Page, world: World) -> None:
    world.fake.script(SONNET, text="Anthropic's events, one delta at a time.", chunks=5,
                      chunk_delay=0.1)  # fmt: skip
    expect(page.get_by_label("Max tokens")).to_be_hidden()
    page.get_by_label("Messages", exact=True).check()
    assert SONNET_ID in options_of(page) and EMBEDDING not in options_of(page)
    page.get_by_label("Model or selector").select_option(SONNET_ID)
    page.get_by_label("Max tokens").fill("256")
    page.get_by_label("Your message").fill("And over Messages?")
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".msg.assistant").nth(1)
    expect(reply.locator(".body")).to_have_class("body streaming")
    expect(reply).to_have_attribute("data-done", "true")
    expect(reply.locator(".who")).to_have_text("Assistant · Messages")
    expect(reply.locator(".body")).to_have_text("Anthropic's events, one delta at a time.")
    facts = reply.locator(".reply-facts")
    expect(facts).to_have_text(re.compile(r"^\d+ → \d+ tokens · .+ · [\d.]+ (ms|s) \(first token"))
    sent = world.fake.requests(SONNET)[0]["body"]
    assert (sent["max_tokens"], [m["content"] for m in sent["messages"]]) == (
        256,
        ["Tell me about streams", "Streams arrive piece by piece.", "And over Messages?"],
    )
    assert drain()
    row = Generation.objects.get(model=SONNET_ID, user__username="alice", api_key=None)
    assert row.api == "messages"
    expect(facts.locator(".cost")).to_have_text(shown_cost(row.cost))
    expect(facts).to_contain_text(f"{row.prompt_tokens} → {row.completion_tokens} tokens")
    link = facts.get_by_role("link", name=row.request_id)
    expect(link).to_have_attribute("href", f"/generations/{row.request_id}/")
    screenshot(page, "playground-messages")


def texts_are_embedded(page: Page, world: World) -> None:
    page.get_by_label("Embeddings", exact=True).check()
    expect(page.get_by_label("Your message")).to_be_hidden()
    assert options_of(page) == ["auto", EMBEDDING]
    page.get_by_label("Model or selector").select_option(EMBEDDING)
    page.get_by_label("Texts to embed").fill("the first text\n\nand a second one")
    page.get_by_role("button", name="Send").click()
    result = page.locator(".msg.embeddings")
    expect(result).to_have_attribute("data-done", "true")
    expect(result.locator(".who")).to_have_text(f"Embeddings · {EMBEDDING}")
    rows = result.locator(".vectors li")
    expect(rows).to_have_count(2)
    for row, text in zip(rows.all(), ["the first text", "and a second one"], strict=True):
        expect(row.locator(".input")).to_have_text(text)
        expect(row.locator(".dimensions")).to_have_text(f"{DEFAULT_DIMENSIONS} dimensions")
        expect(row.locator(".values")).to_have_text(first_values(embedding_vector(text)))
    assert drain()
    recorded = Generation.objects.get(model=EMBEDDING, user__username="alice", api_key=None)
    assert recorded.api == "embeddings"
    facts = result.locator(".reply-facts")
    expect(facts).to_have_text(re.compile(rf"^{recorded.prompt_tokens} tokens · "))
    expect(facts).to_contain_text(shown_cost(recorded.cost))
    expect(facts.get_by_role("link", name=recorded.request_id)).to_be_visible()
    screenshot(page, "playground-embeddings")


def first_values(vector: list[float]) -> str:
    """The first values of a vector as the page writes them: four decimals, ties away from
    zero (JavaScript's toFixed)."""
    shown = [str(Decimal(v).quantize(Decimal("0.0001"), ROUND_HALF_UP)) for v in vector[:5]]
    return f"[{', '.join(shown)}, …]"


def shown_cost(cost: Decimal) -> str:
    """A cost as the pages write money: two decimals at least, six at most."""
    six = f"{cost:.6f}".rstrip("0")
    return "$" + six + "0" * max(0, 2 - len(six.split(".")[1]))


def test_a_generation_arrives_in_the_live_feed(alice_in: Page, world: World) -> None:
    page = alice_in
    nav(page, "Generations")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    response = world.post(HELLO)
    assert response.status_code == 200
    request_id = response.headers["X-Momor-Request-Id"]
    row = page.locator(f'#generations-table tr[data-request-id="{request_id}"]')
    expect(row).to_contain_text("openai/gpt-5")
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    screenshot(page, "generations")


def test_the_owner_pages(
    alice_in: Page, world: World, browser: Browser, mailoutbox: list[Any]
) -> None:
    """Invite carol: the link goes to her mailbox alone; she follows it, sets a password and
    lands in acme."""
    page = alice_in
    nav(page, "Members")
    page.get_by_label("Email").fill("carol@example.com")
    page.get_by_role("button", name="Invite").click()
    expect(page.locator(".flash.success")).to_contain_text("mailed to carol@example.com")
    expect(page.locator("#invitations")).to_contain_text("carol@example.com")
    (mail,) = mailoutbox
    link = re.search(r"/invitations/\S+/", mail.body)
    assert link and link.group(0) not in page.content()
    screenshot(page, "members")
    nav(page, "Billing")
    expect(page.locator("#ledger")).to_contain_text("Top-up")
    screenshot(page, "billing")

    carol = browser.new_context(base_url=world.url).new_page()
    carol.goto(link.group(0))
    carol.get_by_label("New password", exact=True).fill("carols-new-pass-42")
    carol.get_by_label("New password confirmation").fill("carols-new-pass-42")
    carol.get_by_role("button", name="Set password and join").click()
    expect(carol.locator(".topbar h1")).to_have_text("Acme")
    screenshot(carol, "invitation-accepted")
    carol.context.close()
    page.reload()
    nav(page, "Members")
    expect(page.locator("#members")).to_contain_text("carol@example.com")
    expect(page.locator("#no-invitations")).to_be_visible()


def test_a_phone_sized_screen_gets_a_drawer(alice_in: Page, world: World) -> None:
    page = alice_in
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/keys/")
    expect(page.locator("#sidebar nav")).not_to_be_in_viewport()
    page.get_by_role("button", name="Menu").click()
    expect(page.locator("#sidebar nav")).to_be_in_viewport()
    page.get_by_role("button", name="Menu").click(force=True)
    screenshot(page, "mobile-keys")


def test_static_files_come_from_the_server(world: World) -> None:
    for path in ["/static/vendor/htmx.min.js", "/static/vendor/chart.umd.min.js"]:
        assert httpx.get(world.url + path).status_code == 200
