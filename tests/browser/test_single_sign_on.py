"""Single sign-on in Chromium against a real OpenID Connect identity provider on loopback (npm's
oidc-provider, tests/identity_provider.py), configured as an operator does, from the
environment: signing in on the provider's own pages, joining by a verified domain with its
role, an owner claiming a domain that an operator verifies in the admin and requiring single
sign-on, and an organization that requires it refusing its members the password path while the
sign-in throttle still counts their attempts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.invitations import invitation_send
from accounts.models import Membership, Organization, Role
from accounts.sso.models import EmailDomain, SignInPolicy
from momor import identity_providers
from tests.browser.conftest import screenshot, sign_in
from tests.conftest import make_org, make_user
from tests.gateway.conftest import World
from tests.identity_provider import identity_provider
from tests.security.test_secrets_at_rest import every_row_as_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLIENT_ID = "momor-test"
SECRET = "a-client-secret-of-the-test-identity-provider"
PEOPLE = {
    "dana": {"email": "dana@acme.test", "email_verified": True, "name": "Dana"},
    "frank": {"email": "frank@acme.test", "email_verified": True, "name": "Frank"},
    "erin": {"email": "erin@acme.test", "email_verified": False, "name": "Erin"},
    "olga": {"email": "olga@elsewhere.test", "email_verified": True, "name": "Olga"},
    "mallory": {"email": "root@acme.test", "email_verified": True, "name": "Mallory"},
}


@pytest.fixture
def issuer(world: World, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The identity provider, configured for Momor from the environment as `acme-idp`."""
    callback = f"{world.url}/accounts/oidc/acme-idp/login/callback/"
    client = {"client_id": CLIENT_ID, "client_secret": SECRET, "redirect_uris": [callback]}
    with identity_provider(client, PEOPLE) as url:
        monkeypatch.setenv("MOMOR_SSO_PROVIDERS", "acme-idp")
        monkeypatch.setenv("MOMOR_SSO_ACME_IDP_NAME", "Acme Identity")
        monkeypatch.setenv("MOMOR_SSO_ACME_IDP_ISSUER", url)
        monkeypatch.setenv("MOMOR_SSO_ACME_IDP_CLIENT_ID", CLIENT_ID)
        monkeypatch.setenv("MOMOR_SSO_ACME_IDP_SECRET", SECRET)
        apps = identity_providers.from_environment()
        settings.SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"APPS": apps}}
        yield url


def verified_domain(org: Organization, domain: str, role: Role) -> EmailDomain:
    return EmailDomain.objects.create(
        organization=org, domain=domain, role=role, verified_at=timezone.now()
    )


def sign_in_at_provider(page: Page, login: str) -> None:
    """From Momor's sign-in page, through the provider's own login and consent pages."""
    page.goto("/accounts/login/")
    page.get_by_role("button", name="Sign in with Acme Identity").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password the provider takes")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()


def password_sign_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-pass-123!")
    page.get_by_role("button", name="Sign in", exact=True).click()


def test_a_person_signs_in_through_the_provider_and_joins_by_verified_domain_with_its_role(
    page: Page, world: World, issuer: str
) -> None:
    verified_domain(world.org, "acme.test", Role.ADMIN)

    sign_in_at_provider(page, "dana")

    expect(page).to_have_url(f"{world.url}/")
    expect(page.locator(".me .who span")).to_have_text("Admin")
    expect(page.locator("nav").get_by_role("link", name="Members")).to_be_visible()
    dana = get_user_model().objects.get(email="dana@acme.test")
    assert list(Membership.objects.filter(user=dana).values_list("organization", "role")) == [
        (world.org.pk, Role.ADMIN)
    ]
    assert dana.socialaccount_set.get().provider == "acme-idp"
    assert [table for table, rows in every_row_as_text().items() if SECRET in rows] == []


def test_an_address_the_provider_has_not_verified_or_on_no_verified_domain_joins_nothing(
    page: Page, world: World, issuer: str
) -> None:
    verified_domain(world.org, "acme.test", Role.MEMBER)
    EmailDomain.objects.create(organization=world.org, domain="elsewhere.test")

    for login in ["erin", "olga"]:
        sign_in_at_provider(page, login)
        expect(page.locator("#signup-closed")).to_contain_text("no organization here admits")
        page.context.clear_cookies()

    assert not get_user_model().objects.filter(email__in=["erin@acme.test", "olga@elsewhere.test"])
    assert not Membership.objects.exclude(organization=world.org).exists()


def test_a_provider_never_signs_in_an_operators_account_by_its_address(
    page: Page, world: World, issuer: str
) -> None:
    verified_domain(world.org, "acme.test", Role.MEMBER)
    get_user_model().objects.create_superuser("root", "root@acme.test", "root-pass-123!")

    sign_in_at_provider(page, "mallory")
    expect(page.locator("h1")).to_have_text("Finish signing up")
    page.goto("/admin/")

    expect(page).to_have_url(f"{world.url}/admin/login/?next=/admin/")
    assert not get_user_model().objects.get(username="root").socialaccount_set.exists()


def test_an_organization_that_requires_sso_refuses_its_members_the_password_path(
    page: Page, world: World, issuer: str, settings: Any
) -> None:
    verified_domain(world.org, "acme.test", Role.MEMBER)
    SignInPolicy.objects.create(organization=world.org, sso_required=True)
    frank = make_user("frank", world.org, Role.ADMIN)
    frank.email = "frank@acme.test"
    frank.save()
    make_user("gus", make_org("globex"), Role.OWNER)

    password_sign_in(page, "frank")
    expect(page.locator("#sso-required")).to_have_text(
        "Your organization requires single sign-on: sign in with your identity provider, "
        "not with a password."
    )
    assert page.url == f"{world.url}/accounts/login/"

    password_sign_in(page, "gus")
    expect(page.locator(".me .who strong")).to_have_text("gus")
    page.context.clear_cookies()

    sign_in_at_provider(page, "frank")
    expect(page.locator(".me .who strong")).to_have_text("frank")
    expect(page.locator(".me .who span")).to_have_text("Admin")
    assert Membership.objects.get(user=frank).role == Role.ADMIN
    page.context.clear_cookies()

    for _ in range(settings.MOMOR_SIGNIN_FAILURES - 1):
        password_sign_in(page, "frank")
        expect(page.locator("#sso-required")).to_be_visible()
    password_sign_in(page, "frank")
    expect(page.locator("#throttled")).to_be_visible()


def test_an_owner_claims_a_domain_an_operator_verifies_it_and_people_join_by_it(
    page: Page, world: World, issuer: str
) -> None:
    make_user("alice", world.org, Role.OWNER)
    sign_in(page, "alice")
    page.goto("/sso/")
    page.get_by_label("Domain").fill("Acme.Test")
    page.get_by_label("Role").select_option("owner")
    page.get_by_role("button", name="Claim").click()
    row = page.locator("#domains tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("acme.test")
    expect(row).to_contain_text("not yet")

    page.get_by_label("Require single sign-on").check()
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator(".field.invalid .error")).to_have_text(
        "Sign in through your identity provider once before requiring it."
    )
    assert not SignInPolicy.objects.filter(sso_required=True).exists()

    sign_in_at_provider(page, "dana")
    expect(page.locator("#signup-closed")).to_be_visible()
    page.context.clear_cookies()

    operator_verifies(page, "acme.test")
    page.context.clear_cookies()

    sign_in_at_provider(page, "dana")
    expect(page.locator(".me .who strong")).to_have_text("dana")
    expect(page.locator(".me .who span")).to_have_text("Owner")
    page.goto("/sso/")
    expect(page.locator("#domains tbody tr")).not_to_contain_text("not yet")
    screenshot(page, "single-sign-on")
    page.get_by_label("Require single sign-on").check()
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator(".flash.success")).to_have_text("Sign-in policy saved.")
    page.context.clear_cookies()

    password_sign_in(page, "alice")
    expect(page.locator("#sso-required")).to_be_visible()
    screenshot(page, "sign-in-sso-required")


def operator_verifies(page: Page, domain: str) -> None:
    """An operator signs in to the admin and runs the verify action on the domain."""
    get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123!")
    page.goto("/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("root-pass-123!")
    page.get_by_role("button", name="Log in").click()
    page.goto("/admin/sso/emaildomain/")
    page.get_by_role("row", name=domain).get_by_role("checkbox").check()
    page.locator("select[name=action]").select_option("verify")
    page.get_by_role("button", name="Go").click()
    expect(page.locator(".messagelist")).to_have_text(f"Verified {domain} for acme.")


def test_an_invitation_to_an_organization_that_requires_sso_is_accepted_through_the_provider(
    page: Page, world: World, issuer: str
) -> None:
    SignInPolicy.objects.create(organization=world.org, sso_required=True)
    links: list[str] = []
    invitation_send(
        organization=world.org,
        email="olga@elsewhere.test",
        role=Role.ADMIN,
        invited_by=make_user("alice", world.org, Role.OWNER),
        link_for=lambda token: links.append(f"{world.url}/invitations/{token}/") or links[-1],
    )

    page.goto(links[0])
    expect(page.locator("#refused")).to_have_text(
        "Acme requires single sign-on: sign in through your identity provider as "
        "olga@elsewhere.test, then open the invitation's link again."
    )
    expect(page.locator("#set-password")).to_have_count(0)

    sign_in_at_provider(page, "olga")
    expect(page).to_have_url(f"{world.url}/welcome/")
    page.goto(links[0])
    page.get_by_role("button", name="Accept and join").click()

    expect(page.locator(".me .who strong")).to_have_text("olga")
    expect(page.locator(".me .who span")).to_have_text("Admin")
    olga = get_user_model().objects.get(email="olga@elsewhere.test")
    assert olga.socialaccount_set.get().provider == "acme-idp"
    assert not olga.has_usable_password()
