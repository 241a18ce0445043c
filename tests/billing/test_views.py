"""Billing's pages of the members' UI, through Django's test client: the overview, the
ledger, generations (list, detail, CSV export) and usage."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounts.models import Organization, Role
from billing.models import DailyRollup, Generation
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import an_embeddings_record
from tests.conftest import make_user
from tests.ui_helpers import make_generation, signed_in, streamed

pytestmark = pytest.mark.django_db


def test_the_overview_shows_the_organization(alice: User, acme: Organization) -> None:
    make_generation(acme, cost="0.25")
    page = signed_in(alice).get("/").content.decode()
    assert "Acme" in page
    assert "$0.25" in page
    assert "$100.00" in page  # the owner sees the balance


def test_billing_shows_the_balance_and_ledger(alice: User, acme: Organization) -> None:
    page = signed_in(alice).get("/billing/").content.decode()
    assert "$100.00" in page
    assert "Top-up" in page


def test_generations_are_filtered_and_paginated(alice: User, acme: Organization) -> None:
    for _ in range(30):
        make_generation(acme, model="openai/gpt-5")
    make_generation(acme, model="mistral/mistral-small", provider="mistral", status="failed")
    client = signed_in(alice)
    first = client.get("/generations/")
    assert len(first.context["page"].rows) == 25
    assert first.context["page"].newer is None
    older = client.get("/generations/", {"before": first.context["page"].older})
    assert len(older.context["page"].rows) == 6
    assert older.context["page"].older is None
    assert older.context["live"] is False
    back = client.get("/generations/", {"after": older.context["page"].newer})
    assert back.context["page"].rows == first.context["page"].rows
    only = client.get("/generations/", {"provider": "mistral", "status": "failed"})
    assert [g.model for g in only.context["page"]] == ["mistral/mistral-small"]
    assert only.context["live"] is False


def test_a_generation_shows_every_attempt(alice: User, acme: Organization) -> None:
    generation = make_generation(acme)
    page = signed_in(alice).get(f"/generations/{generation.request_id}/").content.decode()
    assert "Momor&#x27;s key" in page
    assert "110 ms" in page
    assert "eu" in page


def test_the_csv_export_has_the_filtered_generations(alice: User, acme: Organization) -> None:
    make_generation(acme, model="openai/gpt-5", cost="0.5")
    make_generation(acme, model="mistral/mistral-small", provider="mistral")
    response = signed_in(alice).get("/generations/export.csv", {"model": "openai/gpt-5"})
    assert response["Content-Type"] == "text/csv"
    assert response.streaming
    rows = list(csv.DictReader(io.StringIO(streamed(response))))
    assert [(r["model"], r["cost"]) for r in rows] == [("openai/gpt-5", "0.500000000")]


def test_usage_is_split_by_model_and_by_provider(alice: User, acme: Organization) -> None:
    today = timezone.now()
    make_generation(acme, model="openai/gpt-5", cost="0.5", tokens=(100, 50))
    make_generation(acme, model="openai/gpt-5", cost="0.25", created_at=today - timedelta(days=1))
    make_generation(acme, model="mistral/mistral-small", provider="mistral", cost="0.1")
    client = signed_in(alice)
    charts = client.get("/usage/", {"days": 7}).context["charts"]
    assert len(charts["cost"]["labels"]) == 7
    by_model = {d["label"]: d["data"] for d in charts["cost"]["datasets"]}
    assert by_model["openai/gpt-5"][-2:] == [0.25, 0.5]
    assert {d["label"]: d["data"][-1] for d in charts["tokens"]["datasets"]} == {
        "openai/gpt-5": 150.0,
        "mistral/mistral-small": 30.0,
    }
    split = client.get("/usage/", {"days": 7, "split": "provider"}).context["charts"]
    assert {d["label"] for d in split["calls"]["datasets"]} == {"openai", "mistral"}


def test_the_usage_menus_show_the_period_the_page_covers(alice: User, acme: Organization) -> None:
    client = signed_in(alice)
    for query, days, split in [
        ({}, "30", "model"),
        ({"split": "provider"}, "30", "provider"),
        ({"days": "7"}, "7", "model"),
        ({"days": "5"}, "30", "model"),  # not offered: the default, and the menu says so
    ]:
        response = client.get("/usage/", query)
        page = response.content.decode()
        assert f'<option value="{days}" selected>' in page
        assert f'<option value="{split}" selected>' in page
        assert len(response.context["charts"]["calls"]["labels"]) == int(days)


def test_calls_no_model_served_are_shown_by_what_they_requested(
    alice: User, acme: Organization
) -> None:
    refused = make_generation(
        acme, model="", provider="", status="refused", cost="0",
        selectors=["anthropic/claude-opus-9"],
    )  # fmt: skip
    make_generation(acme, model="", provider="", status="refused", cost="0")  # named nothing
    failed = make_generation(
        acme, model="", provider="", status="failed", cost="0", selectors=["openai/gpt-5-mini"]
    )
    client = signed_in(alice)
    listed = client.get("/generations/").content.decode()
    requested = '<span class="requested" title="Requested; no model served it">'
    assert requested + "anthropic/claude-opus-9" in listed
    assert requested + "openai/gpt-5-mini" in listed
    assert (
        "<h1>openai/gpt-5-mini</h1>"
        in client.get(f"/generations/{failed.request_id}/").content.decode()
    )
    assert "(none)" not in listed
    assert "anthropic/claude-opus-9" in client.get("/").content.decode()
    detail = client.get(f"/generations/{refused.request_id}/").content.decode()
    assert "<h1>anthropic/claude-opus-9</h1>" in detail
    charts = client.get("/usage/").context["charts"]
    assert {d["label"] for d in charts["calls"]["datasets"]} == {
        "anthropic/claude-opus-9 (not served)",
        "openai/gpt-5-mini (not served)",
        "not served",
    }
    by_provider = client.get("/usage/", {"split": "provider"})
    labels = {d["label"] for d in by_provider.context["charts"]["calls"]["datasets"]}
    assert labels == {"not served"}  # no provider served them: one row, not one a model
    assert '<td>not served</td><td class="num">3</td>' in by_provider.content.decode()


def test_money_is_written_one_way_on_every_page(alice: User, acme: Organization) -> None:
    from billing.ledger.posting import ledger_post
    from billing.models import EntryKind

    generation = make_generation(acme, cost="0.000033")
    ledger_post(organization_id=acme.pk, kind=EntryKind.CHARGE, amount=Decimal("-0.0000392"))
    client = signed_in(alice)
    pages = {
        "/": ["$0.000033", "$99.999961"],
        "/generations/": ["$0.000033"],
        f"/generations/{generation.request_id}/": ["$0.000033"],
        "/usage/": ["$0.000033"],
        "/billing/": ["$99.999961", "-$0.000039", "99.999960800 USD exactly"],
    }
    for path, amounts in pages.items():
        page = client.get(path).content.decode()
        for amount in amounts:
            assert amount in page, f"{amount} not on {path}"
        assert "$0.0000<" not in page and "$0.000033000" not in page


def test_dates_are_written_one_way_on_every_page(alice: User, acme: Organization) -> None:
    moment = datetime(2026, 3, 4, 15, 6, 7, tzinfo=UTC)
    generation = make_generation(acme, created_at=moment)
    client = signed_in(alice)
    for path in ["/", "/generations/", f"/generations/{generation.request_id}/"]:
        page = client.get(path).content.decode()
        assert "Mar 4, 2026 15:06" in page, path
        assert 'title="2026-03-04T15:06:07+00:00"' in page, path


def test_usage_is_split_by_app(alice: User, acme: Organization) -> None:

    for app in ("Notes", "Notes", "https://b.example/", ""):
        make_generation(acme, app=app)
    split = signed_in(alice).get("/usage/", {"days": 7, "split": "app"}).context["charts"]
    calls = {d["label"]: d["data"][-1] for d in split["calls"]["datasets"]}
    assert calls == {"Notes": 2.0, "https://b.example/": 1.0, "(none)": 1.0}


def test_generations_filter_by_session_and_app_and_show_them(
    alice: User, acme: Organization
) -> None:
    from billing.models import Generation

    mine = make_generation(acme)
    Generation.objects.filter(pk=mine.pk).update(
        session_id="s-1", app="Notes", client_request_id="trace-1",
        routing={"excluded": [{"model": "openai/gpt-5", "provider": "azure",
                               "reason": "provider.only does not name it"}]},
    )  # fmt: skip
    make_generation(acme)
    client = signed_in(alice)
    by_session = client.get("/generations/", {"session": "s-1"}).context["page"]
    by_app = client.get("/generations/", {"app": "Notes"}).context["page"]
    assert [g.pk for g in by_session] == [g.pk for g in by_app] == [mine.pk]
    page = client.get(f"/generations/{mine.request_id}/").content.decode()
    assert "trace-1" in page and "s-1" in page and "Notes" in page
    assert "provider.only does not name it" in page


def test_cursor_pages_keep_every_call_once_when_many_share_a_moment(
    alice: User, acme: Organization
) -> None:
    moment = timezone.now() - timedelta(minutes=5)
    made = {make_generation(acme, created_at=moment).request_id for _ in range(60)}
    client = signed_in(alice)
    seen: list[str] = []
    cursor: dict[str, str] = {}
    while True:
        page = client.get("/generations/", cursor).context["page"]
        seen += [g.request_id for g in page]
        if page.older is None:
            break
        cursor = {"before": page.older}
    assert len(seen) == len(set(seen)) == 60
    assert set(seen) == made


@pytest.mark.parametrize("cursor", ["nonsense", "2026-13-45T00:00:00+00:00_1", "_", "2026-01-01_x"])
def test_a_malformed_cursor_shows_the_first_page(
    alice: User, acme: Organization, cursor: str
) -> None:
    newest = make_generation(acme)
    response = signed_in(alice).get("/generations/", {"before": cursor, "after": cursor})
    assert response.status_code == 200
    assert [g.request_id for g in response.context["page"]] == [newest.request_id]


def test_a_charge_in_the_ledger_names_its_model_once(alice: User, acme: Organization) -> None:
    from billing.ledger.posting import ledger_post
    from billing.models import EntryKind

    generation = make_generation(acme, model="demo/echo", provider="demo")
    ledger_post(
        organization_id=acme.pk,
        kind=EntryKind.CHARGE,
        amount=Decimal("-0.001"),
        note="demo/echo via demo",
        generation_id=generation.pk,
    )
    page = signed_in(alice).get("/billing/").content.decode()
    link = f'<a href="/generations/{generation.request_id}/">demo/echo via demo</a>'
    assert f"<td>{link}</td>" in page
    assert page.count("demo/echo") == 1


def test_attempts_are_numbered_from_one(alice: User, acme: Organization) -> None:
    from billing.models import Attempt

    generation = make_generation(acme)
    generation.attempts.update(position=0)
    Attempt.objects.create(
        generation=generation, position=1, model="openai/gpt-5", provider="azure",
        upstream_id="gpt-5-azure", key_source="momor", http_status=200, latency_ms=90,
    )  # fmt: skip
    page = signed_in(alice).get(f"/generations/{generation.request_id}/")
    rows = page.context["attempts"]
    assert [row.provider for row in rows] == ["openai", "azure"]
    text = page.content.decode()
    assert '<td class="position">1</td>' in text
    assert '<td class="position">2</td>' in text
    assert '<td class="position">0</td>' not in text


@pytest.mark.parametrize(
    ("status", "said"),
    [
        ("failed", "no usage: the call cost nothing"),
        ("refused", "no usage: the call cost nothing"),
        ("success", "from the provider's usage"),
    ],
)
def test_a_call_that_cost_nothing_says_so(
    alice: User, acme: Organization, status: str, said: str
) -> None:
    cost = "0" if status != "success" else "0.001"
    generation = make_generation(acme, status=status, cost=cost, tokens=(0, 0))
    page = signed_in(alice).get(f"/generations/{generation.request_id}/").content.decode()
    assert f"<em>{said}</em>" in page


def test_generations_filter_by_api_and_show_it(alice: User, acme: Organization) -> None:
    chat = make_generation(acme)
    embedded = make_generation(acme, model="openai/text-embedding-3-small", api="embeddings")
    client = signed_in(alice)

    listed = client.get("/generations/")
    page = listed.content.decode()
    assert '<option value="embeddings">Embeddings</option>' in page  # the filter's menu
    assert "<th>When</th><th>Model</th>" in page  # the API is a badge in the model's cell
    assert '<span class="badge api" title="Embeddings">embeddings</span>' in page
    assert '<span class="badge api" title="Chat Completions">chat</span>' in page
    by_api = client.get("/generations/", {"api": "embeddings"}).context["page"]
    assert [g.pk for g in by_api] == [embedded.pk]
    assert [g.pk for g in client.get("/generations/", {"api": "chat"}).context["page"]] == [chat.pk]
    assert client.get("/generations/", {"api": "images"}).status_code == 400
    detail = client.get(f"/generations/{embedded.request_id}/").content.decode()
    assert "<dt>API</dt><dd>Embeddings <code>embeddings</code></dd>" in detail
    export = client.get("/generations/export.csv", {"api": "embeddings"})
    rows = list(csv.DictReader(io.StringIO(streamed(export))))
    assert [(r["request_id"], r["api"]) for r in rows] == [(embedded.request_id, "embeddings")]


@pytest.mark.django_db(transaction=True)
def test_usage_is_split_by_api_from_records_handed_off(world: World) -> None:
    """A chat call made over HTTP and a record of another API handed off through the real
    record path (as the embeddings route hands its calls off): stored, counted in the daily
    usage per API, and shown split by API on the usage page."""
    served = world.post({"model": "openai/gpt-5", "messages": HI})
    assert served.status_code == 200, served.text
    embedded = an_embeddings_record(world.org.pk)
    asyncio.run(record_call(embedded))
    assert drain()

    assert Generation.objects.get(request_id=embedded.request_id).api == "embeddings"
    rollups = DailyRollup.objects.filter(organization=world.org)
    assert sorted(rollups.values_list("api", "model", "calls")) == [
        ("chat", "openai/gpt-5", 1),
        ("embeddings", "openai/text-embedding-3-small", 1),
    ]
    client = signed_in(make_user("alice", world.org, Role.OWNER))
    response = client.get("/usage/", {"days": 7, "split": "api"})
    page = response.content.decode()
    assert '<option value="api" selected>By API</option>' in page
    assert "per day, split by API." in page
    assert "<th>API</th>" in page
    charts = response.context["charts"]
    tokens = {d["label"]: d["data"][-1] for d in charts["tokens"]["datasets"]}
    cost = {d["label"]: d["data"][-1] for d in charts["cost"]["datasets"]}
    chat = Generation.objects.get(request_id=served.headers["x-momor-request-id"])
    assert tokens == {
        "Chat Completions": float(chat.prompt_tokens + chat.completion_tokens),
        "Embeddings": 1000.0,
    }
    assert cost == {"Chat Completions": float(chat.cost), "Embeddings": 0.00125}
    by_model = client.get("/usage/", {"days": 7}).context["charts"]["calls"]["datasets"]
    assert {d["label"] for d in by_model} == {"openai/gpt-5", "openai/text-embedding-3-small"}
