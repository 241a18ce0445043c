"""Every mutating route of the members' UI and the management API, and every addition,
change, deletion and action of every model in the operators' admin, leaves exactly one audit
row naming who made it. The routes are walked from the URL conf and the admin from its
registry: a new route or model fails here until it is audited or listed as no change, with
the reason, in NOT_CHANGES."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sites.models import Site
from django.db import models
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.invitations import invitation_send
from accounts.models import (
    ApiKey,
    Budget,
    Invitation,
    KeyKind,
    Membership,
    Organization,
    Role,
    SavedKey,
)
from accounts.sso.models import EmailDomain, SignInPolicy
from alerts.models import WebhookEndpoint
from audit.models import ActorKind, AuditEvent
from gateway.models import Model, Offering, Provider
from tests.audit.page_forms import form_data
from tests.conftest import make_key, make_org, make_user
from tests.dns_server import dns_server
from tests.test_admin import World
from tests.ui_helpers import signed_in

NEW_PASSWORD = "a-new-pass-456!"

NOT_CHANGES = {
    "admin/login/": "signs in: the session alone changes",
    "admin/operations/": "reads the metrics",
    "accounts/login/": "signs in: the session alone changes",
    "accounts/logout/": "signs out: the session alone changes",
    "accounts/password_change/done/": "a page",
    "accounts/password_reset/": "mails a link and changes nothing; the reset itself is audited",
    "accounts/password_reset/done/": "a page",
    "accounts/reset/done/": "a page",
    "welcome/": "a page",
    "organizations/switch/": "picks the session's organization: the session alone changes",
    "audit/": "reads the audit trail",
    "alerts/webhooks/<int:pk>/": "reads a webhook's deliveries",
    "api/manage/alerts/webhooks/<int:pk>/deliveries/": "reads a webhook's deliveries",
    "api/manage/alerts/events/": "reads what fired",
    "audit/export.csv": "reads the audit trail",
    "": "the overview, read",
    "billing/": "reads the ledger",
    "usage/": "reads the usage",
    "generations/": "reads the records",
    "generations/export.csv": "reads the records",
    "generations/<str:request_id>/": "reads a record",
    "playground/": "a page; its calls go to the call routes",
    "api/manage/credits/": "reads the balance",
    "api/manage/ledger/": "reads the ledger",
    "api/manage/generations/": "reads the records",
    "api/manage/schema/": "reads the schema",
    "api/manage/docs/": "reads the docs",
    "v1/models": "reads the catalog",
    "api/v1/models": "reads the catalog",
    "v1/generation": "reads a record",
    "api/v1/generation": "reads a record",
    "^static/(?P<path>.+)$": "static files",
    # Single sign-on: a sign-in changes the session; the account a first one makes and the
    # memberships it makes by an e-mail domain are audited from allauth's signals, tested
    # without an identity provider in test_sso_joining.py.
    "accounts/oidc/^(?P<provider_id>[^/]+)/login/": "starts a sign-in at the identity provider",
    "accounts/oidc/^(?P<provider_id>[^/]+)/login/callback/": "signs in (sign-up, joins: audited)",
    "accounts/sso/signup/": "signs up through an identity provider (sign-up, joins: audited)",
    "accounts/sso/cancelled/": "a page",
    "accounts/sso/sign-in/": "leads to the sign-in page",
    "accounts/sso/sign-up/": "leads to the sign-in page",
    "accounts/sso/inactive/": "leads to the sign-in page",
    "accounts/sso/error/": "a page",
    **{
        route: "a call to a model: recorded and billed as a generation, not a change"
        for route in (
            "v1/chat/completions",
            "api/v1/chat/completions",
            "models/completions",
            "v1/embeddings",
            "api/v1/embeddings",
            "v1/messages",
            "api/v1/messages",
            "v1/responses",
            "api/v1/responses",
            "v1/messages/count_tokens",
            "api/v1/messages/count_tokens",
        )
    },
}


@dataclass
class Scene:
    world: World
    acme: Organization
    alice: User
    ops_plain: str
    ops_key: ApiKey

    def owner(self) -> Client:
        return signed_in(self.alice)

    def manager(self) -> Client:
        return Client(HTTP_AUTHORIZATION=f"Bearer {self.ops_plain}")

    def member_of_acme(self, name: str) -> Membership:
        return Membership.objects.get(user=make_user(name, self.acme), organization=self.acme)

    def budget(self) -> Budget:
        return Budget.objects.create(
            organization=self.acme, scope="organization", period="daily", amount=5
        )

    def webhook(self) -> WebhookEndpoint:
        hook = WebhookEndpoint(organization=self.acme, url="https://hooks.example/momor")
        hook.set_secret("whsec_scene")
        hook.save()
        return hook

    def domain(self) -> EmailDomain:
        return EmailDomain.objects.create(organization=self.acme, domain="acme.example")

    def invitation(self, email: str = "carol@example.com") -> tuple[Invitation, str]:
        links: list[str] = []
        sent = invitation_send(
            organization=self.acme,
            invited_by=self.alice,
            email=email,
            role=Role.MEMBER,
            link_for=lambda token: links.append(token) or token,
        )
        return sent, links[0]


ALICE = (ActorKind.USER, "alice")
Scenario = Callable[[Scene], tuple[Any, tuple[str, str]]]


def _key_actor(scene: Scene) -> tuple[str, str]:
    return ActorKind.KEY, f"{scene.ops_key.prefix}…"


def _accept_by_link(scene: Scene) -> tuple[Any, tuple[str, str]]:
    _, token = scene.invitation()
    passwords = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    return Client().post(f"/invitations/{token}/", passwords), (ActorKind.USER, "carol@example.com")


def _accept_opened(scene: Scene) -> tuple[Any, tuple[str, str]]:
    make_user("carol")
    User.objects.filter(username="carol").update(email="carol@example.com")
    _, token = scene.invitation()
    client = signed_in(User.objects.get(username="carol"))
    client.get(f"/invitations/{token}/")
    return client.post("/invitations/accept/"), (ActorKind.USER, "carol")


def _reset_password(scene: Scene) -> tuple[Any, tuple[str, str]]:
    uid = urlsafe_base64_encode(force_bytes(scene.alice.pk))
    token = default_token_generator.make_token(scene.alice)
    client = Client()
    form_page = client.get(f"/accounts/reset/{uid}/{token}/")
    passwords = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    return client.post(form_page["Location"], passwords), ALICE


def _verify_by_dns(scene: Scene) -> tuple[Any, tuple[str, str]]:
    claimed = scene.domain()
    with dns_server() as dns, override_settings(MOMOR_DNS_NAMESERVERS=[dns.address]):
        dns.records[claimed.challenge_name] = [claimed.challenge_value]
        return scene.owner().post(f"/sso/domains/{claimed.pk}/check/"), ALICE


MUTATIONS: dict[str, Scenario] = {
    "keys/": lambda s: (s.owner().post("/keys/", {"name": "new"}), ALICE),
    "keys/<int:pk>/limits/": lambda s: (
        s.owner().post(f"/keys/{s.world.api_key.pk}/limits/", {"credit_limit": "5"}),
        ALICE,
    ),
    "keys/<int:pk>/revoke/": lambda s: (
        s.owner().post(f"/keys/{s.world.api_key.pk}/revoke/"),
        ALICE,
    ),
    "budgets/": lambda s: (
        s.owner().post("/budgets/", {"period": "daily", "amount": "5"}),
        ALICE,
    ),
    "provider-keys/": lambda s: (
        s.owner().post("/provider-keys/", {"provider": "azure@eu", "secret": "sk-new-eu-1234"}),
        ALICE,
    ),
    "provider-keys/<int:pk>/remove/": lambda s: (
        s.owner().post(f"/provider-keys/{s.world.saved_key.pk}/remove/"),
        ALICE,
    ),
    "policy/": lambda s: (s.owner().post("/policy/", {"zdr_hold": "on"}), ALICE),
    "members/": lambda s: (
        s.owner().post("/members/", {"email": "dan@example.com", "role": "member"}),
        ALICE,
    ),
    "members/<int:pk>/role/": lambda s: (
        s.owner().post(f"/members/{s.member_of_acme('bob').pk}/role/", {"role": "admin"}),
        ALICE,
    ),
    "members/<int:pk>/remove/": lambda s: (
        s.owner().post(f"/members/{s.member_of_acme('bob').pk}/remove/"),
        ALICE,
    ),
    "members/invitations/<int:pk>/revoke/": lambda s: (
        s.owner().post(f"/members/invitations/{s.invitation()[0].pk}/revoke/"),
        ALICE,
    ),
    "invitations/<str:token>/": _accept_by_link,
    "invitations/accept/": _accept_opened,
    "organization/": lambda s: (s.owner().post("/organization/", {"name": "Acme Inc"}), ALICE),
    "accounts/password_change/": lambda s: (
        s.owner().post(
            "/accounts/password_change/",
            {
                "old_password": "alice-pass-123!",
                "new_password1": NEW_PASSWORD,
                "new_password2": NEW_PASSWORD,
            },
        ),
        ALICE,
    ),
    "accounts/reset/<uidb64>/<token>/": _reset_password,
    "api/manage/keys/": lambda s: (
        s.manager().post("/api/manage/keys/", {"name": "made"}, content_type="application/json"),
        _key_actor(s),
    ),
    "api/manage/keys/<int:pk>/": lambda s: (
        s.manager().patch(
            f"/api/manage/keys/{s.world.api_key.pk}/",
            json.dumps({"name": "renamed"}),
            content_type="application/json",
        ),
        _key_actor(s),
    ),
    "sso/": lambda s: (
        s.owner().post("/sso/", {"domain": "acme.example", "role": "member"}),
        ALICE,
    ),
    "sso/policy/": lambda s: (s.owner().post("/sso/policy/"), ALICE),
    "sso/domains/<int:pk>/check/": _verify_by_dns,
    "sso/domains/<int:pk>/remove/": lambda s: (
        s.owner().post(f"/sso/domains/{s.domain().pk}/remove/"),
        ALICE,
    ),
    "api/manage/budgets/": lambda s: (
        s.manager().post(
            "/api/manage/budgets/",
            {"period": "daily", "amount": "5"},
            content_type="application/json",
        ),
        _key_actor(s),
    ),
    "api/manage/budgets/<int:pk>/": lambda s: (
        s.manager().patch(
            f"/api/manage/budgets/{s.budget().pk}/",
            json.dumps({"amount": "6"}),
            content_type="application/json",
        ),
        _key_actor(s),
    ),
    "api/manage/budgets/<int:pk>/ DELETE": lambda s: (
        s.manager().delete(f"/api/manage/budgets/{s.budget().pk}/"),
        _key_actor(s),
    ),
    "alerts/": lambda s: (
        s.owner().post("/alerts/", {"kind": "balance", "threshold": "5"}),
        ALICE,
    ),
    "alerts/rules/<int:pk>/remove/": lambda s: (
        s.owner().post(f"/alerts/rules/{s.acme.alert_rules.first().pk}/remove/"),
        ALICE,
    ),
    "alerts/webhooks/": lambda s: (
        s.owner().post("/alerts/webhooks/", {"url": "https://hooks.example/momor"}),
        ALICE,
    ),
    "alerts/webhooks/<int:pk>/test/": lambda s: (
        s.owner().post(f"/alerts/webhooks/{s.webhook().pk}/test/"),
        ALICE,
    ),
    "alerts/webhooks/<int:pk>/secret/": lambda s: (
        s.owner().post(f"/alerts/webhooks/{s.webhook().pk}/secret/"),
        ALICE,
    ),
    "alerts/webhooks/<int:pk>/remove/": lambda s: (
        s.owner().post(f"/alerts/webhooks/{s.webhook().pk}/remove/"),
        ALICE,
    ),
    "api/manage/alerts/rules/": lambda s: (
        s.manager().post(
            "/api/manage/alerts/rules/",
            {"kind": "balance", "threshold": "5"},
            content_type="application/json",
        ),
        _key_actor(s),
    ),
    "api/manage/alerts/rules/<int:pk>/ DELETE": lambda s: (
        s.manager().delete(f"/api/manage/alerts/rules/{s.acme.alert_rules.first().pk}/"),
        _key_actor(s),
    ),
    "api/manage/alerts/webhooks/": lambda s: (
        s.manager().post(
            "/api/manage/alerts/webhooks/",
            {"url": "https://hooks.example/momor"},
            content_type="application/json",
        ),
        _key_actor(s),
    ),
    "api/manage/alerts/webhooks/<int:pk>/ DELETE": lambda s: (
        s.manager().delete(f"/api/manage/alerts/webhooks/{s.webhook().pk}/"),
        _key_actor(s),
    ),
    "api/manage/alerts/webhooks/<int:pk>/secret/": lambda s: (
        s.manager().post(f"/api/manage/alerts/webhooks/{s.webhook().pk}/secret/"),
        _key_actor(s),
    ),
    "api/manage/alerts/webhooks/<int:pk>/test/": lambda s: (
        s.manager().post(f"/api/manage/alerts/webhooks/{s.webhook().pk}/test/"),
        _key_actor(s),
    ),
    "api/manage/keys/<int:pk>/revoke/": lambda s: (
        s.manager().post(f"/api/manage/keys/{s.world.api_key.pk}/revoke/"),
        _key_actor(s),
    ),
}


def _routes(patterns: list[Any], prefix: str = "") -> list[str]:
    """Every route of the URL conf but the admin site's (walked from its registry below)."""
    routes: list[str] = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver) and route != "admin/":
            routes += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            routes.append(route)
    return list(dict.fromkeys(routes))


def test_every_route_is_audited_or_listed_as_no_change() -> None:
    routes = set(_routes(get_resolver().url_patterns))
    changed = {key.split(" ")[0] for key in MUTATIONS}
    assert routes - changed - NOT_CHANGES.keys() == set()
    assert (changed | NOT_CHANGES.keys()) - routes == set()
    assert changed & NOT_CHANGES.keys() == set()


@pytest.fixture
def scene(world: World) -> Scene:
    acme = world.api_key.organization
    alice = User.objects.get(username="alice")
    plain, key = make_key(acme, name="ops", kind=KeyKind.MANAGEMENT, created_by=alice)
    return Scene(world, acme, alice, plain, key)


@pytest.mark.parametrize("route", sorted(MUTATIONS))
def test_each_change_leaves_one_audit_row_naming_its_actor(route: str, scene: Scene) -> None:
    before = AuditEvent.objects.count()
    response, (kind, label) = MUTATIONS[route](scene)
    assert response.status_code in (200, 201, 202, 204, 302), response.content[:500]
    rows = list(AuditEvent.objects.order_by("id")[before:])
    assert [(row.actor_kind, row.actor) for row in rows] == [(kind, label)]
    assert rows[0].address == "127.0.0.1"


# The operators' admin ---------------------------------------------------------------------

_SUPERUSER = SimpleNamespace(
    user=SimpleNamespace(
        is_active=True, is_staff=True, is_superuser=True, has_perm=lambda *a: True
    ),
    GET={},
)


def _admin_changes() -> list[tuple[str, str]]:
    """(model, change) for every change the admin offers: add, change, delete, each action."""
    changes = []
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        if model_admin.has_add_permission(_SUPERUSER):
            changes.append((label, "add"))
        if model_admin.has_change_permission(_SUPERUSER):
            changes.append((label, "change"))
        if model_admin.has_delete_permission(_SUPERUSER):
            changes.append((label, "delete"))
        for name in model_admin.get_actions(_SUPERUSER):
            if name != "delete_selected":
                changes.append((label, f"action:{name}"))
    return sorted(changes)


def _fresh(label: str, scene: Scene) -> models.Model:
    """An object of the model that the admin may change and delete."""
    made = scene.world
    factories: dict[str, Callable[[], models.Model]] = {
        "auth.group": lambda: Group.objects.create(name="ops"),
        "auth.user": lambda: make_user("dave"),
        "accounts.organization": lambda: make_org("initech"),
        "accounts.apikey": lambda: make_key(scene.acme, name="spare")[1],
        "accounts.savedkey": lambda: _saved_key(scene.acme),
        "gateway.provider": lambda: _provider(),
        "gateway.model": lambda: Model.objects.create(id="acme/spare"),
        "sites.site": lambda: Site.objects.create(domain="spare.example", name="spare"),
        "account.emailaddress": lambda: EmailAddress.objects.create(
            user=scene.alice, email="alice@example.com"
        ),
        "socialaccount.socialaccount": lambda: SocialAccount.objects.create(
            user=scene.alice, provider="idp", uid="alice-1", extra_data={"sub": "alice-1"}
        ),
        "sso.emaildomain": lambda: EmailDomain.objects.create(
            organization=scene.acme, domain="acme.example"
        ),
        "sso.signinpolicy": lambda: SignInPolicy.objects.create(organization=scene.acme),
        "gateway.offering": lambda: Offering.objects.create(
            model=made.model, provider=made.provider, upstream_id="spare"
        ),
    }
    return factories[label]()


def _saved_key(org: Organization) -> SavedKey:
    saved = SavedKey(organization=org, provider="azure@eu")
    saved.set_secret("sk-acme-eu-secret-0123456789")
    saved.save()
    return saved


def _provider() -> Provider:
    provider = Provider(name="mistral", api="mistral", base_url="https://mistral.example/v1")
    provider.set_key("")
    provider.save()
    return provider


ADDS: dict[str, Callable[[Scene], dict[str, Any]]] = {
    "auth.group": lambda s: {"name": "auditors"},
    "auth.user": lambda s: {
        "username": "erin",
        "usable_password": "true",
        "password1": NEW_PASSWORD,
        "password2": NEW_PASSWORD,
    },
    "accounts.organization": lambda s: {"slug": "hooli", "name": "Hooli"},
    "accounts.savedkey": lambda s: {
        "organization": s.acme.pk,
        "provider": "azure@eu",
        "secret": "sk-acme-eu-secret-0123456789",
    },
    "gateway.provider": lambda s: {
        "name": "mistral",
        "api": "mistral",
        "base_url": "https://mistral.example/v1",
        "locations": "[]",
    },
    "gateway.model": lambda s: {"id": "acme/new", "tiers": "[]"},
    "gateway.offering": lambda s: {
        "model": s.world.model.pk,
        "provider": s.world.provider.pk,
        "upstream_id": "gpt-5-b",
        "prompt_price": "1",
        "completion_price": "2",
        "cache_read_price": "0",
        "cache_write_price": "0",
        "reasoning_efforts": "[]",
        "input_modalities": "[]",
        "parameters": "[]",
    },
    "sites.site": lambda s: {"domain": "new.example", "name": "new"},
    "account.emailaddress": lambda s: {"user": s.alice.pk, "email": "alice@example.com"},
    "sso.emaildomain": lambda s: {
        "organization": s.acme.pk,
        "domain": "acme.example",
        "role": "member",
    },
    "sso.signinpolicy": lambda s: {"organization": s.acme.pk},
    "socialaccount.socialaccount": lambda s: {
        "user": s.alice.pk,
        "provider": "idp",
        "uid": "alice-2",
        "extra_data": '{"sub": "alice-2"}',
    },
    "billing.ledgerentry": lambda s: {"organization": s.acme.pk, "amount": "5", "note": "gift"},
}


def test_every_model_the_admin_adds_has_an_addition_here() -> None:
    added = {label for label, change in _admin_changes() if change == "add"}
    assert added == ADDS.keys()


def _admin_url(label: str, view: str, *args: Any) -> str:
    return reverse(f"admin:{label.replace('.', '_')}_{view}", args=args)


def _submit(client: Client, url: str, form_id: str, changes: dict[str, Any]) -> Any:
    data: dict[str, Any] = form_data(client.get(url).content.decode(), form_id)
    data.update({name: str(value) for name, value in changes.items()})
    return client.post(url, data)


def _admin_change(client: Client, scene: Scene, label: str, change: str) -> Any:
    form_id = f"{label.split('.')[1]}_form"
    if change == "add":
        return _submit(client, _admin_url(label, "add"), form_id, ADDS[label](scene))
    obj = _fresh(label, scene)
    if change == "change":
        return _submit(client, _admin_url(label, "change", obj.pk), form_id, {})
    if change == "delete":
        return client.post(_admin_url(label, "delete", obj.pk), {"post": "yes"})
    action = change.removeprefix("action:")
    selected = {"action": action, "_selected_action": [obj.pk]}
    return client.post(_admin_url(label, "changelist"), selected)


def _refusal(response: Any) -> Any:
    """What the admin's form refused, or the page when it is not a form."""
    form = (response.context or {}).get("adminform")
    return form.form.errors if form is not None else response.content.decode()[:3000]


@pytest.mark.parametrize(("label", "change"), _admin_changes())
def test_each_admin_change_leaves_one_audit_row_naming_the_operator(
    label: str, change: str, scene: Scene, admin_client: Client, admin_user: User
) -> None:
    before = AuditEvent.objects.count()
    response = _admin_change(admin_client, scene, label, change)
    assert response.status_code == 302, _refusal(response)
    rows = list(AuditEvent.objects.order_by("id")[before:])
    assert [(row.actor_kind, row.actor, row.object_type) for row in rows] == [
        (ActorKind.OPERATOR, admin_user.username, label)
    ]
