"""Accounts' pages of the members' UI, through Django's test client: sign-in, API keys,
provider keys, policy, members, the organization and its switcher; what each shows and what
each form changes."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.mail import EmailMessage
from django.test import Client
from django.urls import reverse

from accounts.models import ApiKey, Membership, Organization, Role, SavedKey
from accounts.permissions import SESSION_ORG
from accounts.secrets import hash_api_key
from gateway.models import Provider, Region
from tests.conftest import make_key, make_org, make_user
from tests.ui_helpers import make_generation, signed_in

pytestmark = pytest.mark.django_db


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


def test_a_person_signs_in_with_their_password(alice: User) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123!"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_creating_a_key_shows_its_secret_once(alice: User, acme: Organization) -> None:
    client = signed_in(alice)
    response = client.post("/keys/", {"name": "ci", "credit_limit": "5", "rate_limit": "60"})
    key = ApiKey.objects.get(name="ci")
    secret = response.context["new_secret"]
    assert key.key_hash == hash_api_key(secret)
    assert (key.credit_limit, key.rate_limit, key.created_by) == (Decimal(5), 60, alice)
    assert secret in response.content.decode()
    assert secret not in client.get("/keys/").content.decode()


def test_the_key_list_shows_each_keys_spend(alice: User, acme: Organization) -> None:
    _, key = make_key(acme, name="prod", created_by=alice)
    make_generation(acme, key=key, cost="0.5")
    make_generation(acme, key=key, cost="0.25")
    response = signed_in(alice).get("/keys/")
    assert response.context["keys"].get(pk=key.pk).spend == Decimal("0.75")
    assert "$0.75<" in response.content.decode()


def test_limits_are_set_and_lifted(alice: User, acme: Organization) -> None:
    _, key = make_key(acme, created_by=alice, credit_limit=Decimal(3))
    client = signed_in(alice)
    client.post(f"/keys/{key.pk}/limits/", {"credit_limit": "", "rate_limit": "30"})
    key.refresh_from_db()
    assert (key.credit_limit, key.rate_limit) == (None, 30)


@pytest.mark.parametrize(
    ("limits", "flash"),
    [
        (
            {"credit_limit": "-1", "rate_limit": ""},
            "Limits not changed: Credit limit: ensure this value is greater than or equal to 0.",
        ),
        (
            {"credit_limit": "-1", "rate_limit": "0"},
            "Limits not changed: Credit limit: ensure this value is greater than or equal to 0. "
            "Rate limit: ensure this value is greater than or equal to 1.",
        ),
    ],
)
def test_limits_that_do_not_validate_are_named_by_their_label(
    alice: User, acme: Organization, limits: dict[str, str], flash: str
) -> None:
    _, key = make_key(acme, created_by=alice)
    response = signed_in(alice).post(f"/keys/{key.pk}/limits/", limits, follow=True)
    assert [str(message) for message in response.context["messages"]] == [flash]
    assert f'<div class="flash error">{flash}</div>' in response.content.decode()


def test_revoking_a_key_over_htmx_returns_its_row(alice: User, acme: Organization) -> None:
    _, key = make_key(acme, created_by=alice)
    response = signed_in(alice).post(f"/keys/{key.pk}/revoke/", headers={"HX-Request": "true"})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert 'class="revoked"' in response.content.decode()
    assert response.templates[0].name == "accounts/_key_row.html"


def test_a_provider_key_is_saved_and_shown_by_its_suffix_only(
    alice: User, acme: Organization, catalog: None
) -> None:
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


def test_saving_again_replaces_the_key_and_remove_deletes_it(
    alice: User, acme: Organization, catalog: None
) -> None:
    client = signed_in(alice)
    client.post("/provider-keys/", {"provider": "azure", "secret": "first-secret-AAAA"})
    client.post("/provider-keys/", {"provider": "azure", "secret": "second-secret-BBBB"})
    saved = SavedKey.objects.get(organization=acme)
    assert saved.secret == "second-secret-BBBB"
    client.post(f"/provider-keys/{saved.pk}/remove/")
    assert not SavedKey.objects.filter(organization=acme).exists()


def test_the_policy_form_sets_every_field(alice: User, acme: Organization) -> None:
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


def test_the_policy_form_refuses_an_unreadable_age(alice: User, acme: Organization) -> None:
    response = signed_in(alice).post("/policy/", {"max_model_age": "six months"})
    assert response.status_code == 400
    assert "not an ISO 8601 duration" in response.content.decode()


@pytest.mark.parametrize("age", ["P999999999Y", "PT99999999999999H"])
def test_the_policy_form_refuses_an_age_past_any_date(
    alice: User, acme: Organization, age: str
) -> None:
    response = signed_in(alice).post("/policy/", {"max_model_age": age})
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "max_model_age": ["a duration of over 999,999,999 days is out of range"]
    }
    acme.refresh_from_db()
    assert acme.max_model_age is None


def test_the_policy_form_keeps_the_longest_age_it_can(alice: User, acme: Organization) -> None:
    client = signed_in(alice)
    assert client.post("/policy/", {"max_model_age": "P2739726Y"}).status_code == 302
    acme.refresh_from_db()
    assert acme.max_model_age == timedelta(days=999_999_990)
    assert 'value="P999999990D"' in client.get("/policy/").content.decode()


def test_inviting_mails_the_link_and_lists_the_invitation(
    alice: User, acme: Organization, mailoutbox: list[EmailMessage]
) -> None:
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


def test_roles_change_and_members_leave(alice: User, bob: User, acme: Organization) -> None:
    client = signed_in(alice)
    membership = Membership.objects.get(user=bob)
    client.post(f"/members/{membership.pk}/role/", {"role": "admin"})
    membership.refresh_from_db()
    assert membership.role == Role.ADMIN
    client.post(f"/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(user=bob).exists()


def test_the_last_owner_stays(alice: User, acme: Organization) -> None:
    own = Membership.objects.get(user=alice)
    response = signed_in(alice).post(f"/members/{own.pk}/role/", {"role": "member"}, follow=True)
    own.refresh_from_db()
    assert own.role == Role.OWNER
    assert "at least one owner" in response.content.decode()


def test_a_member_of_two_organizations_switches(alice: User, acme: Organization) -> None:
    other = make_org("initech")
    Membership.objects.create(user=alice, organization=other, role=Role.MEMBER)
    client = signed_in(alice)
    assert client.get("/").context["current"].organization == acme
    client.post("/organizations/switch/", {"organization": other.pk})
    assert client.session[SESSION_ORG] == other.pk
    assert client.get("/").context["current"].organization == other


def test_the_owner_renames_the_organization(alice: User, acme: Organization) -> None:
    signed_in(alice).post("/organization/", {"name": "Acme Corporation"})
    acme.refresh_from_db()
    assert acme.name == "Acme Corporation"


def test_someone_of_no_organization_is_told_so(db: None) -> None:
    lonely = make_user("lonely")
    client = signed_in(lonely)
    assert client.get("/keys/")["Location"] == reverse("no-organization")
    assert "not in an organization" in client.get(reverse("no-organization")).content.decode()
