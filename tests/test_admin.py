"""The operators' admin: every page renders, secrets never do, records stay read-only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiKey, Organization, SavedKey
from billing.ledger.posting import ledger_sum
from billing.models import Attempt, EntryKind, Generation, GenerationStatus, LedgerEntry
from core.paging import planner_estimate
from gateway.models import Model, Offering, Provider, Region
from tests.conftest import make_key

PROVIDER_KEY = "sk-momor-own-azure-key-0123456789-PvKy"
NEW_PROVIDER_KEY = "sk-momor-rotated-azure-key-9876543210-NwPk"
SAVED_SECRET = "sk-acme-own-azure-secret-0123456789-QzXw"
NEW_SAVED_SECRET = "sk-acme-rotated-azure-secret-9876543210-RtVb"
BASE_URL = "https://region.example/v1"


@dataclass
class World:
    provider: Provider
    region: Region
    model: Model
    offering: Offering
    api_key: ApiKey
    plain_api_key: str
    saved_key: SavedKey
    generation: Generation
    ledger_entry: LedgerEntry


@pytest.fixture
def world(acme: Organization, alice: Any) -> World:
    provider = Provider(name="azure", api="azure", base_url="https://azure.example/v1")
    provider.key_env = "AZURE_API_KEY"
    provider.set_key(PROVIDER_KEY)
    provider.save()
    region = Region.objects.create(provider=provider, name="eu", base_url="https://eu.example/v1")
    model = Model.objects.create(id="openai/gpt-5", released=date(2025, 8, 7), tiers=["high"])
    offering = Offering.objects.create(
        model=model, provider=provider, region=region, upstream_id="gpt-5-eu", tools=True
    )
    plain, api_key = make_key(acme, name="ci")
    saved_key = SavedKey(organization=acme, provider="azure", label="acme's azure")
    saved_key.set_secret(SAVED_SECRET)
    saved_key.save()
    generation = _generation(acme)
    entry = LedgerEntry.objects.get(organization=acme)
    return World(provider, region, model, offering, api_key, plain, saved_key, generation, entry)


def _generation(org: Organization) -> Generation:
    generation = Generation.objects.create(
        request_id="gen-0001",
        organization=org,
        model="openai/gpt-5",
        provider="azure@eu",
        status=GenerationStatus.SUCCESS,
        prompt_tokens=12,
        completion_tokens=34,
        cost=Decimal("0.000355"),
        created_at=timezone.now(),
    )
    Attempt.objects.create(
        generation=generation,
        position=0,
        model="openai/gpt-5",
        provider="openai",
        upstream_id="gpt-5",
        key_source="momor",
        http_status=503,
        error="upstream overloaded",
    )
    Attempt.objects.create(
        generation=generation,
        position=1,
        model="openai/gpt-5",
        provider="azure",
        region="eu",
        upstream_id="gpt-5-eu",
        key_source="own",
        http_status=200,
    )
    return generation


def _url(obj: Any, view: str) -> str:
    opts = obj._meta
    args = [] if view in ("changelist", "add") else [obj.pk]
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def _page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _assert_never_rendered(client: Client, obj: Any, *needles: str) -> None:
    for view in ("changelist", "change", "history", "delete"):
        content = _page(client, _url(obj, view))
        for needle in needles:
            assert needle not in content, (view, needle)
    for entry in LogEntry.objects.all():
        for needle in needles:
            assert needle not in f"{entry.object_repr} {entry.change_message}"


def _provider_form(world: World, **changes: str) -> dict[str, Any]:
    data = {
        "name": "azure",
        "display_name": "",
        "api": "azure",
        "base_url": "https://azure.example/v1",
        "key_env": "AZURE_API_KEY",
        "new_key": "",
        "regions-TOTAL_FORMS": "1",
        "regions-INITIAL_FORMS": "1",
        "regions-MIN_NUM_FORMS": "0",
        "regions-MAX_NUM_FORMS": "1000",
        "regions-0-id": str(world.region.pk),
        "regions-0-name": "eu",
        "regions-0-base_url": "https://eu.example/v1",
    }
    return {**data, **changes}


def _saved_key_form(world: World, **changes: str) -> dict[str, Any]:
    data = {
        "organization": str(world.saved_key.organization_id),
        "provider": "azure",
        "label": "acme's azure",
        "secret": "",
    }
    return {**data, **changes}


def _changelist_edit(obj: Any, **fields: str) -> dict[str, str]:
    data = {
        "form-TOTAL_FORMS": "1",
        "form-INITIAL_FORMS": "1",
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "form-0-id": str(obj.pk),
        "_save": "Save",
    }
    return {**data, **{f"form-0-{name}": value for name, value in fields.items()}}


# Pages


@pytest.mark.parametrize(
    ("attribute", "can_add"),
    [
        ("provider", True),
        ("model", True),
        ("offering", True),
        ("organization", True),
        ("api_key", False),
        ("saved_key", True),
        ("generation", False),
        ("ledger_entry", True),
    ],
)
def test_it_renders_every_admin_page_for_a_superuser(
    admin_client: Client, world: World, attribute: str, can_add: bool
) -> None:
    obj = world.saved_key.organization if attribute == "organization" else getattr(world, attribute)
    assert admin_client.get(_url(obj, "changelist")).status_code == 200
    assert admin_client.get(_url(obj, "change")).status_code == 200
    assert admin_client.get(_url(obj, "add")).status_code == (200 if can_add else 403)


def test_it_redirects_a_non_staff_member_to_the_admin_login(client: Client, bob: Any) -> None:
    client.force_login(bob)
    response = client.get("/admin/accounts/organization/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/accounts/organization/"


# Momor's own provider keys


def test_it_never_renders_the_provider_key(admin_client: Client, world: World) -> None:
    _assert_never_rendered(admin_client, world.provider, PROVIDER_KEY, world.provider.key_encrypted)


def test_it_shows_whether_a_provider_key_is_stored(admin_client: Client, world: World) -> None:
    Provider.objects.create(name="mistral", api="mistral", base_url="https://mistral.example")
    content = _page(admin_client, _url(world.provider, "changelist"))
    assert "Momor key stored" in content
    assert content.count('alt="True"') == 1
    assert content.count('alt="False"') == 1


def test_it_stores_a_new_provider_key_without_ever_rendering_it(
    admin_client: Client, world: World
) -> None:
    old_ciphertext = world.provider.key_encrypted
    data = _provider_form(world, new_key=NEW_PROVIDER_KEY)
    response = admin_client.post(_url(world.provider, "change"), data)
    assert response.status_code == 302
    world.provider.refresh_from_db()
    assert world.provider.stored_key() == NEW_PROVIDER_KEY
    _assert_never_rendered(
        admin_client,
        world.provider,
        PROVIDER_KEY,
        NEW_PROVIDER_KEY,
        old_ciphertext,
        world.provider.key_encrypted,
    )


def test_it_keeps_the_provider_key_when_the_new_key_is_empty(
    admin_client: Client, world: World
) -> None:
    ciphertext = world.provider.key_encrypted
    response = admin_client.post(_url(world.provider, "change"), _provider_form(world))
    assert response.status_code == 302
    world.provider.refresh_from_db()
    assert world.provider.key_encrypted == ciphertext
    assert world.provider.stored_key() == PROVIDER_KEY


def test_it_clears_the_provider_key_on_request(admin_client: Client, world: World) -> None:
    data = _provider_form(world, clear_key="on")
    response = admin_client.post(_url(world.provider, "change"), data)
    assert response.status_code == 302
    world.provider.refresh_from_db()
    assert world.provider.key_encrypted == ""
    assert world.provider.stored_key() == ""


def test_it_refuses_to_set_and_clear_the_provider_key_at_once(
    admin_client: Client, world: World
) -> None:
    data = _provider_form(world, new_key=NEW_PROVIDER_KEY, clear_key="on")
    response = admin_client.post(_url(world.provider, "change"), data)
    assert response.status_code == 200
    assert "Either set a new key or clear the stored one, not both." in response.content.decode()
    assert NEW_PROVIDER_KEY not in response.content.decode()
    world.provider.refresh_from_db()
    assert world.provider.stored_key() == PROVIDER_KEY


def test_it_edits_provider_zdr_from_the_list_page(admin_client: Client, world: World) -> None:
    data = _changelist_edit(world.provider, zdr="on")
    response = admin_client.post(_url(world.provider, "changelist"), data)
    assert response.status_code == 302
    world.provider.refresh_from_db()
    assert world.provider.zdr is True
    assert world.provider.stored_key() == PROVIDER_KEY


def test_it_refuses_an_offering_in_another_providers_region(
    admin_client: Client, world: World
) -> None:
    other = Provider.objects.create(name="openai", api="openai", base_url="https://oa.example")
    data = {
        "model": world.model.pk,
        "provider": other.pk,
        "region": world.region.pk,
        "upstream_id": "gpt-5",
        "prompt_price": "1.25",
        "completion_price": "10",
        "cache_read_price": "0",
        "cache_write_price": "0",
        "reasoning_efforts": "[]",
        "input_modalities": "[]",
        "enabled": "on",
    }
    response = admin_client.post(_url(world.offering, "add"), data)
    assert response.status_code == 200
    assert "azure@eu is not a region of openai." in response.content.decode()
    assert Offering.objects.count() == 1


# Organizations' saved keys


def test_it_never_renders_a_saved_key_secret(admin_client: Client, world: World) -> None:
    _assert_never_rendered(
        admin_client,
        world.saved_key,
        SAVED_SECRET,
        world.saved_key.secret_encrypted,
        world.saved_key.suffix,
    )


def test_it_saves_a_new_saved_key_secret_without_ever_rendering_it(
    admin_client: Client, world: World
) -> None:
    old_ciphertext = world.saved_key.secret_encrypted
    data = _saved_key_form(world, secret=NEW_SAVED_SECRET)
    response = admin_client.post(_url(world.saved_key, "change"), data)
    assert response.status_code == 302
    world.saved_key.refresh_from_db()
    assert world.saved_key.secret == NEW_SAVED_SECRET
    assert world.saved_key.suffix == "RtVb"
    _assert_never_rendered(
        admin_client,
        world.saved_key,
        SAVED_SECRET,
        NEW_SAVED_SECRET,
        old_ciphertext,
        world.saved_key.secret_encrypted,
        "QzXw",
        "RtVb",
    )


def test_it_adds_a_saved_key_with_its_secret_encrypted(
    admin_client: Client, world: World, globex: Organization
) -> None:
    data = _saved_key_form(
        world, organization=str(globex.pk), provider="azure@eu", secret=NEW_SAVED_SECRET
    )
    response = admin_client.post(_url(world.saved_key, "add"), data)
    assert response.status_code == 302
    saved = SavedKey.objects.get(organization=globex)
    assert saved.provider == "azure@eu"
    assert saved.secret == NEW_SAVED_SECRET
    assert NEW_SAVED_SECRET not in saved.secret_encrypted
    _assert_never_rendered(admin_client, saved, NEW_SAVED_SECRET, saved.secret_encrypted)


def test_it_requires_a_secret_to_add_a_saved_key(
    admin_client: Client, world: World, globex: Organization
) -> None:
    data = _saved_key_form(world, organization=str(globex.pk))
    response = admin_client.post(_url(world.saved_key, "add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"secret": ["This field is required."]}
    assert SavedKey.objects.filter(organization=globex).exists() is False


def test_it_refuses_a_saved_key_for_a_provider_not_in_the_catalog(
    admin_client: Client, world: World, globex: Organization
) -> None:
    data = _saved_key_form(
        world, organization=str(globex.pk), provider="azure@us", secret=NEW_SAVED_SECRET
    )
    response = admin_client.post(_url(world.saved_key, "add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "provider": ["No provider or region azure@us in the catalog."]
    }


def test_it_keeps_a_saved_key_secret_when_left_empty(admin_client: Client, world: World) -> None:
    ciphertext = world.saved_key.secret_encrypted
    data = _saved_key_form(world, label="renamed")
    response = admin_client.post(_url(world.saved_key, "change"), data)
    assert response.status_code == 302
    world.saved_key.refresh_from_db()
    assert world.saved_key.label == "renamed"
    assert world.saved_key.secret_encrypted == ciphertext
    assert world.saved_key.secret == SAVED_SECRET


def test_it_edits_saved_key_zdr_from_the_list_page(admin_client: Client, world: World) -> None:
    data = _changelist_edit(world.saved_key, zdr="on")
    response = admin_client.post(_url(world.saved_key, "changelist"), data)
    assert response.status_code == 302
    world.saved_key.refresh_from_db()
    assert world.saved_key.zdr is True
    assert world.saved_key.secret == SAVED_SECRET


# API keys


def test_it_never_renders_an_api_key_hash(admin_client: Client, world: World) -> None:
    _assert_never_rendered(admin_client, world.api_key, world.api_key.key_hash, world.plain_api_key)
    assert world.api_key.prefix in _page(admin_client, _url(world.api_key, "changelist"))


def test_it_revokes_the_selected_keys(admin_client: Client, world: World) -> None:
    _, other = make_key(world.saved_key.organization, name="other")
    _, kept = make_key(world.saved_key.organization, name="kept")
    data = {"action": "revoke_keys", "_selected_action": [world.api_key.pk, other.pk]}
    response = admin_client.post(_url(world.api_key, "changelist"), data)
    assert response.status_code == 302
    revoked = ApiKey.objects.filter(revoked_at__isnull=False)
    assert sorted(revoked.values_list("name", flat=True)) == ["ci", "other"]
    assert list(ApiKey.objects.active()) == [kept]


# Generations


def test_it_shows_a_generation_with_its_attempts(admin_client: Client, world: World) -> None:
    content = _page(admin_client, _url(world.generation, "change"))
    assert "gen-0001" in content
    assert "upstream overloaded" in content
    assert "gpt-5-eu" in content
    assert 'name="_save"' not in content


def test_it_numbers_a_generations_attempts_from_one(admin_client: Client, world: World) -> None:
    content = _page(admin_client, _url(world.generation, "change"))
    numbers = re.findall(r'<td class="field-number">\s*<p>(\d+)</p>', content)
    assert numbers == ["1", "2"]


def test_it_never_changes_a_generation(admin_client: Client, world: World) -> None:
    url = _url(world.generation, "change")
    response = admin_client.post(url, {"request_id": "forged", "status": "failed"})
    assert response.status_code == 403
    world.generation.refresh_from_db()
    assert world.generation.request_id == "gen-0001"


def test_it_never_deletes_a_generation(admin_client: Client, world: World) -> None:
    url = _url(world.generation, "delete")
    assert admin_client.get(url).status_code == 403
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Generation.objects.count() == 1
    assert Attempt.objects.count() == 2


GENERATION_LISTS = [
    {},
    {"provider": "azure@eu"},
    {"status__exact": "success"},
    {"streamed__exact": "0"},
    {"created_at__gte": "2000-01-01 00:00:00+00:00"},
    {"q": "acme"},
    {"q": "gen-0001"},
]


def _generation_reads(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if '"billing_generation"' in q["sql"]]


@pytest.mark.parametrize("query", GENERATION_LISTS, ids=lambda q: "&".join(q) or "all")
def test_the_generations_list_never_counts_or_lists_the_whole_table(
    admin_client: Client, world: World, query: dict[str, str]
) -> None:
    url = _url(world.generation, "changelist")
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(url, query)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1
    for sql in _generation_reads(captured):
        if "COUNT(" in sql:
            assert "LIMIT 10000" in sql, sql
        assert "DISTINCT" not in sql, sql
        assert "LIKE" not in sql, sql


def test_past_the_bound_the_generations_list_counts_by_the_planners_estimate(
    admin_client: Client, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.paging.COUNT_BOUND", 3)
    for n in range(4):
        Generation.objects.create(
            request_id=f"gen-1{n:03}", organization=world.generation.organization,
            status=GenerationStatus.FAILED, created_at=timezone.now(),
        )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE billing_generation")

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(_url(world.generation, "changelist"))

    changelist = response.context["cl"]
    assert changelist.result_count == planner_estimate(changelist.queryset) >= 3
    reads = _generation_reads(captured)
    assert any(sql.startswith("EXPLAIN (FORMAT JSON)") for sql in reads)
    assert all("LIMIT 3" in sql for sql in reads if "COUNT(" in sql)


def test_the_generations_search_matches_a_request_id_a_model_or_an_organization_exactly(
    admin_client: Client, world: World, globex: Organization
) -> None:
    Generation.objects.create(
        request_id="gen-0002", organization=globex, model="mistral/mistral-small",
        status=GenerationStatus.SUCCESS, created_at=timezone.now(),
    )  # fmt: skip
    url = _url(world.generation, "changelist")

    def found(term: str) -> list[str]:
        rows = admin_client.get(url, {"q": term}).context["cl"].result_list
        return [g.request_id for g in rows]

    assert found("gen-0001") == ["gen-0001"]
    assert found("mistral/mistral-small") == ["gen-0002"]
    assert found("acme") == ["gen-0001"]
    assert found("globex") == ["gen-0002"]
    assert found("gen-000") == []
    assert "exact request ID" in _page(admin_client, url)


def test_the_generations_provider_filter_offers_the_providers_recorded(
    admin_client: Client, world: World
) -> None:
    for provider in ("mistral", "", "mistral", "anthropic"):
        Generation.objects.create(
            request_id=f"gen-{provider or 'none'}-{Generation.objects.count()}",
            organization=world.generation.organization, provider=provider,
            status=GenerationStatus.SUCCESS, created_at=timezone.now(),
        )  # fmt: skip
    response = admin_client.get(_url(world.generation, "changelist"))
    [menu] = [f for f in response.context["cl"].filter_specs if f.title == "provider"]
    assert [label for _, label in menu.lookup_choices] == ["anthropic", "azure@eu", "mistral"]
    rows = admin_client.get(_url(world.generation, "changelist"), {"provider": "mistral"})
    assert rows.context["cl"].result_count == 2


# Ledger


def test_it_posts_an_adjustment_through_the_ledger(
    admin_client: Client, admin_user: Any, world: World
) -> None:
    org = world.saved_key.organization
    data = {"organization": str(org.pk), "amount": "-12.5", "note": "goodwill reversal"}
    response = admin_client.post(_url(world.ledger_entry, "add"), data)
    assert response.status_code == 302
    org.refresh_from_db()
    assert org.balance == Decimal("87.5")
    assert ledger_sum(org.pk) == Decimal("87.5")
    entry = LedgerEntry.objects.get(kind=EntryKind.ADJUSTMENT)
    assert (entry.amount, entry.balance_after) == (Decimal("-12.5"), Decimal("87.5"))
    assert (entry.note, entry.created_by_id) == ("goodwill reversal", admin_user.pk)


def test_an_adjustment_posted_again_with_its_idempotency_key_posts_once(
    admin_client: Client, world: World
) -> None:
    org = world.saved_key.organization
    data = {"organization": str(org.pk), "amount": "-12.5", "note": "", "idempotency_key": "t-9"}
    first = admin_client.post(_url(world.ledger_entry, "add"), data)
    again = admin_client.post(_url(world.ledger_entry, "add"), data)

    assert (first.status_code, again.status_code) == (302, 302)
    assert first["location"] == again["location"]
    org.refresh_from_db()
    assert org.balance == Decimal("87.5") == ledger_sum(org.pk)
    assert LedgerEntry.objects.filter(kind=EntryKind.ADJUSTMENT).count() == 1


def test_another_adjustment_under_a_used_idempotency_key_is_refused(
    admin_client: Client, world: World
) -> None:
    org = world.saved_key.organization
    data = {"organization": str(org.pk), "amount": "-12.5", "note": "", "idempotency_key": "t-9"}
    admin_client.post(_url(world.ledger_entry, "add"), data)

    response = admin_client.post(_url(world.ledger_entry, "add"), {**data, "amount": "-13"})

    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["idempotency_key"]
    assert error.startswith("the idempotency key 't-9' posted entry ")
    assert error.endswith(" (adjustment, -12.5 USD); this posting is not the same")
    org.refresh_from_db()
    assert org.balance == Decimal("87.5")


def test_it_refuses_an_adjustment_of_zero(admin_client: Client, world: World) -> None:
    org = world.saved_key.organization
    data = {"organization": str(org.pk), "amount": "0", "note": ""}
    response = admin_client.post(_url(world.ledger_entry, "add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "amount": ["An adjustment must move the balance."]
    }
    assert LedgerEntry.objects.count() == 1


def test_it_never_changes_or_deletes_a_ledger_entry(admin_client: Client, world: World) -> None:
    entry = world.ledger_entry
    data = {"organization": str(entry.organization_id), "amount": "1000", "note": "forged"}
    assert admin_client.post(_url(entry, "change"), data).status_code == 403
    assert admin_client.post(_url(entry, "delete"), {"post": "yes"}).status_code == 403
    entry.refresh_from_db()
    assert entry.amount == Decimal(100)
    assert 'name="_save"' not in _page(admin_client, _url(entry, "change"))


def test_it_shows_the_balance_read_only(admin_client: Client, world: World) -> None:
    org = world.saved_key.organization
    content = _page(admin_client, _url(org, "change"))
    assert 'name="balance"' not in content
    assert "100.000000000" in content


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("view", ["changelist", "add"])
def test_the_offering_pages_take_as_many_queries_for_many_regions_as_for_one(
    admin_client: Client, world: World, view: str
) -> None:
    url = _url(world.offering, view)
    _queries(admin_client, url)  # the first request loads the session and content types
    with_one = _queries(admin_client, url)
    for name in ("us", "ap", "ca", "br"):
        region = Region.objects.create(provider=world.provider, name=name, base_url=BASE_URL)
        Offering.objects.create(
            model=world.model, provider=world.provider, region=region, upstream_id="gpt-5"
        )
    assert _queries(admin_client, url) == with_one


def test_it_filters_offerings_by_region(admin_client: Client, world: World) -> None:
    Offering.objects.create(model=world.model, provider=world.provider, upstream_id="gpt-5")
    url = _url(world.offering, "changelist")
    response = admin_client.get(url, {"region__id__exact": world.region.pk})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [world.offering]
    assert response.context["cl"].result_count == 1
