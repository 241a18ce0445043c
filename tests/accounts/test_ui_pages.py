"""The members' UI pages, through Django's test client: what each shows and what each form
changes."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiKey, Membership, Role, SavedKey
from accounts.permissions import SESSION_ORG
from accounts.secrets import hash_api_key
from gateway.models import Provider, Region
from tests.accounts.ui_helpers import make_generation
from tests.conftest import make_key, make_org, make_user

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def catalog(db: None) -> None:
    azure = Provider(name="azure", api="azure", base_url="https://azure.example/v1")
    azure.set_key("")
    azure.save()
    Region.objects.create(provider=azure, name="eu", base_url="https://eu.azure.example/v1")


def test_it_sends_a_visitor_to_sign_in() -> None:
    response = Client().get("/keys/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/keys/"


def test_a_person_signs_in_with_their_password(alice) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123!"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_the_overview_shows_the_organization(alice, acme) -> None:  # type: ignore[no-untyped-def]
    make_generation(acme, cost="0.25")
    page = signed_in(alice).get("/").content.decode()
    assert "Acme" in page
    assert "$0.2500" in page
    assert "$100.00" in page  # the owner sees the balance


def test_creating_a_key_shows_its_secret_once(alice, acme) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(alice)
    response = client.post("/keys/", {"name": "ci", "credit_limit": "5", "rate_limit": "60"})
    key = ApiKey.objects.get(name="ci")
    secret = response.context["new_secret"]
    assert key.key_hash == hash_api_key(secret)
    assert (key.credit_limit, key.rate_limit, key.created_by) == (Decimal(5), 60, alice)
    assert secret in response.content.decode()
    assert secret not in client.get("/keys/").content.decode()


def test_the_key_list_shows_each_keys_spend(alice, acme) -> None:  # type: ignore[no-untyped-def]
    _, key = make_key(acme, name="prod", created_by=alice)
    make_generation(acme, key=key, cost="0.5")
    make_generation(acme, key=key, cost="0.25")
    response = signed_in(alice).get("/keys/")
    assert response.context["keys"].get(pk=key.pk).spend == Decimal("0.75")
    assert "$0.7500" in response.content.decode()


def test_limits_are_set_and_lifted(alice, acme) -> None:  # type: ignore[no-untyped-def]
    _, key = make_key(acme, created_by=alice, credit_limit=Decimal(3))
    client = signed_in(alice)
    client.post(f"/keys/{key.pk}/limits/", {"credit_limit": "", "rate_limit": "30"})
    key.refresh_from_db()
    assert (key.credit_limit, key.rate_limit) == (None, 30)


def test_revoking_a_key_over_htmx_returns_its_row(alice, acme) -> None:  # type: ignore[no-untyped-def]
    _, key = make_key(acme, created_by=alice)
    response = signed_in(alice).post(f"/keys/{key.pk}/revoke/", headers={"HX-Request": "true"})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert 'class="revoked"' in response.content.decode()
    assert response.templates[0].name == "accounts/_key_row.html"


def test_a_provider_key_is_saved_and_shown_by_its_suffix_only(alice, acme, catalog) -> None:  # type: ignore[no-untyped-def]
    secret = "azure-secret-value-WXYZ"
    client = signed_in(alice)
    response = client.post(
        "/provider-keys/", {"provider": "azure@eu", "secret": secret, "zdr": "on"}
    )
    assert response.status_code == 302
    saved = SavedKey.objects.get(organization=acme)
    assert (saved.provider, saved.zdr, saved.secret, saved.suffix) == (
        "azure@eu",
        True,
        secret,
        "WXYZ",
    )
    page = client.get("/provider-keys/").content.decode()
    assert "••••WXYZ" in page
    assert "azure-secret-value" not in page


def test_saving_again_replaces_the_key_and_remove_deletes_it(alice, acme, catalog) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(alice)
    client.post("/provider-keys/", {"provider": "azure", "secret": "first-secret-AAAA"})
    client.post("/provider-keys/", {"provider": "azure", "secret": "second-secret-BBBB"})
    saved = SavedKey.objects.get(organization=acme)
    assert saved.secret == "second-secret-BBBB"
    client.post(f"/provider-keys/{saved.pk}/remove/")
    assert not SavedKey.objects.filter(organization=acme).exists()


def test_the_policy_form_sets_every_field(alice, acme) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(alice)
    client.post("/policy/", {"zdr_hold": "on", "allow_deprecated": "on", "max_model_age": "P6M"})
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.allow_deprecated, acme.max_model_age) == (
        True,
        True,
        timedelta(days=180),
    )
    assert 'value="P180D"' in client.get("/policy/").content.decode()
    client.post("/policy/", {"max_model_age": ""})
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.allow_deprecated, acme.max_model_age) == (False, False, None)


def test_the_policy_form_refuses_an_unreadable_age(alice, acme) -> None:  # type: ignore[no-untyped-def]
    response = signed_in(alice).post("/policy/", {"max_model_age": "six months"})
    assert response.status_code == 400
    assert "not an ISO 8601 duration" in response.content.decode()


def test_inviting_mails_the_link_and_lists_the_invitation(alice, acme, mailoutbox) -> None:  # type: ignore[no-untyped-def]
    response = signed_in(alice).post(
        "/members/", {"email": "Carol@Example.com", "role": "admin"}, follow=True
    )
    assert response.status_code == 200
    (mail,) = mailoutbox
    assert mail.to == ["carol@example.com"]
    assert "http://testserver/invitations/" in mail.body
    page = response.content.decode()
    assert "carol@example.com" in page and "/invitations/" not in page.replace(
        "/members/invitations/", ""
    )
    assert not Membership.objects.filter(user__email="carol@example.com").exists()


def test_roles_change_and_members_leave(alice, bob, acme) -> None:  # type: ignore[no-untyped-def]
    client = signed_in(alice)
    membership = Membership.objects.get(user=bob)
    client.post(f"/members/{membership.pk}/role/", {"role": "admin"})
    membership.refresh_from_db()
    assert membership.role == Role.ADMIN
    client.post(f"/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(user=bob).exists()


def test_the_last_owner_stays(alice, acme) -> None:  # type: ignore[no-untyped-def]
    own = Membership.objects.get(user=alice)
    response = signed_in(alice).post(f"/members/{own.pk}/role/", {"role": "member"}, follow=True)
    own.refresh_from_db()
    assert own.role == Role.OWNER
    assert "at least one owner" in response.content.decode()


def test_a_member_of_two_organizations_switches(alice, acme) -> None:  # type: ignore[no-untyped-def]
    other = make_org("initech")
    Membership.objects.create(user=alice, organization=other, role=Role.MEMBER)
    client = signed_in(alice)
    assert client.get("/").context["current"].organization == acme
    client.post("/organizations/switch/", {"organization": other.pk})
    assert client.session[SESSION_ORG] == other.pk
    assert client.get("/").context["current"].organization == other


def test_billing_shows_the_balance_and_ledger(alice, acme) -> None:  # type: ignore[no-untyped-def]
    page = signed_in(alice).get("/billing/").content.decode()
    assert "$100.00" in page
    assert "Top-up" in page


def test_the_owner_renames_the_organization(alice, acme) -> None:  # type: ignore[no-untyped-def]
    signed_in(alice).post("/organization/", {"name": "Acme Corporation"})
    acme.refresh_from_db()
    assert acme.name == "Acme Corporation"


def test_generations_are_filtered_and_paginated(alice, acme) -> None:  # type: ignore[no-untyped-def]
    for _ in range(30):
        make_generation(acme, model="openai/gpt-5")
    make_generation(acme, model="mistral/mistral-small", provider="mistral", status="failed")
    client = signed_in(alice)
    first = client.get("/generations/")
    assert len(first.context["page"].object_list) == 25
    assert first.context["page"].paginator.count == 31
    only = client.get("/generations/", {"provider": "mistral", "status": "failed"})
    assert [g.model for g in only.context["page"]] == ["mistral/mistral-small"]
    assert only.context["live"] is False


def test_a_generation_shows_every_attempt(alice, acme) -> None:  # type: ignore[no-untyped-def]
    generation = make_generation(acme)
    page = signed_in(alice).get(f"/generations/{generation.request_id}/").content.decode()
    assert "Momor&#x27;s key" in page
    assert "110 ms" in page
    assert "eu" in page


def test_the_csv_export_has_the_filtered_generations(alice, acme) -> None:  # type: ignore[no-untyped-def]
    make_generation(acme, model="openai/gpt-5", cost="0.5")
    make_generation(acme, model="mistral/mistral-small", provider="mistral")
    response = signed_in(alice).get("/generations/export.csv", {"model": "openai/gpt-5"})
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["model"], r["cost"]) for r in rows] == [("openai/gpt-5", "0.500000000")]


def test_usage_is_split_by_model_and_by_provider(alice, acme) -> None:  # type: ignore[no-untyped-def]
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


def test_the_playground_lists_models_and_selectors(alice, acme) -> None:  # type: ignore[no-untyped-def]
    from gateway.models import Model

    Model.objects.create(id="openai/gpt-5", tiers=["high"], auto=True)
    response = signed_in(alice).get("/playground/")
    assert response.context["models"] == ["openai/gpt-5"]
    assert response.context["selectors"] == ["auto", "tier/high"]
    assert "csrftoken" in response.cookies


def test_someone_of_no_organization_is_told_so(db: None) -> None:
    lonely = make_user("lonely")
    client = signed_in(lonely)
    assert client.get("/keys/")["Location"] == reverse("no-organization")
    assert "not in an organization" in client.get(reverse("no-organization")).content.decode()


def test_static_files_are_served(db: None) -> None:
    response = Client().get("/static/css/momor.css")
    assert response.status_code == 200
    assert b"sidebar" in response.content
    assert Client().get("/static/../manage.py").status_code in {400, 404}
