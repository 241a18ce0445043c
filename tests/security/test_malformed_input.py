"""Attacker-style, by property (hypothesis): every management API route (found by walking the
URL conf under /api/manage/), every form of the members' UI and every management command's
argument (and the benchmark's seeding's), fed out-of-range and malformed values (huge and
negative numbers, floats, NaN and Infinity, NUL characters, long and unicode text, wrong JSON
types, deep nesting, dates off the calendar). None answers a 500 or raises past its edge (a
command refuses with a one-line CommandError), and a refusal stores nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.models import ApiKey, Invitation, KeyKind, Membership, Organization, Role, SavedKey
from bench import seed
from billing.models import DailyRollup, Generation, LedgerEntry
from tests.conftest import make_key, make_org

pytestmark = [pytest.mark.security, pytest.mark.django_db]

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values ------------------------------------------------------------------------------------

HUGE_INTS = [2**31 - 1, 2**31, 3_000_000_000, 2**63 - 1, 2**63, 10**30, -1, -(2**63) - 1, 0]
TRICKY_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1e30",
    "1e-30",
    "-1",
    "0",
    "-0",
    "0x10",
    "99999999999999999999",
    "3000000000",
    "2147483648",
    "1.0000000001",
    "999999999.9999999999",
    "\u0663\u0661",
    "9999-12-31",
    "0001-01-01",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "2026-02-30",
    "99999-01-01",
    "P999999999999Y",
    "PT0S",
    "none",
    "owner",
    "management",
    "x" * 300,
    "y" * 5000,
    "\U0001f600" * 60,
    "<script>",
    "' OR 1=1 --",
    "../../etc/passwd",
]
texts = st.one_of(
    st.sampled_from(TRICKY_TEXT),
    st.sampled_from(TRICKY_TEXT),
    st.sampled_from(HUGE_INTS).map(str),
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.text(st.characters(codec="utf-8"), max_size=10).map(lambda t: t + "\x00"),
)
scalars = st.one_of(
    st.sampled_from(HUGE_INTS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
DEEP = [b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000, b"[" * 100_000]


def json_body(fields: list[str]) -> st.SearchStrategy[bytes]:
    """A body for a JSON route: an object of its fields (and others) holding malformed values,
    another JSON type, or bytes that are no JSON at all."""
    known = st.dictionaries(st.sampled_from(fields), json_values, min_size=1, max_size=4)
    anything = st.dictionaries(texts, json_values, max_size=3)
    as_json = st.one_of(known, known, anything, json_values).map(_dumps)
    raw = st.one_of(st.sampled_from(DEEP), st.binary(max_size=50), st.just(b"NaN"))
    return st.one_of(as_json, as_json, as_json, raw)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=True).encode()


def query(params: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(params), texts, max_size=4)


def form(fields: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(fields), texts, min_size=1, max_size=len(fields))


# What is stored -----------------------------------------------------------------------------


def stored() -> tuple[Any, ...]:
    """Every row a refused input could have written (a key's last use aside: a management
    key's call moves it)."""
    keys = ApiKey.objects.order_by("pk").values_list(
        "pk", "name", "kind", "credit_limit", "rate_limit", "expires_at", "revoked_at"
    )
    return (
        list(Organization.objects.order_by("pk").values()),
        list(keys),
        list(Membership.objects.order_by("pk").values()),
        list(Invitation.objects.order_by("pk").values_list("pk", "email", "role", "revoked_at")),
        list(SavedKey.objects.order_by("pk").values_list("pk", "provider", "label", "zdr")),
        LedgerEntry.objects.count(),
        Generation.objects.count(),
        DailyRollup.objects.count(),
    )


def assert_safe(response: Any, before: tuple[Any, ...], what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code}"
    if response.status_code >= 400:
        assert stored() == before, f"{what}: refused ({response.status_code}) but stored"


# The world ----------------------------------------------------------------------------------


@dataclass
class World:
    org: Organization
    callers: dict[str, Client]
    ids: list[int]


def member(name: str, org: Organization, role: Role) -> Any:
    """A person signed in by force_login: no password to hash (that is most of a user's cost)."""
    user = get_user_model().objects.create(username=name, email=f"{name}@example.com")
    Membership.objects.create(user=user, organization=org, role=role)
    return user


def session(user: Any, org: Organization) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    store = client.session
    store["momor_org_id"] = org.pk
    store.save()
    return client


@pytest.fixture
def world(db: None) -> World:
    """Alice owns acme, Bob is a member with a key, Carol an admin with an invitation out;
    a management key of Alice's that expires in a day."""
    acme = make_org("acme", credits=Decimal(100))
    alice, bob = member("alice", acme, Role.OWNER), member("bob", acme, Role.MEMBER)
    member("carol", acme, Role.ADMIN)
    day = timezone.now() + timedelta(days=1)
    ops, ops_row = make_key(
        acme, name="ops", kind=KeyKind.MANAGEMENT, created_by=alice, expires_at=day
    )
    _, bobs = make_key(acme, name="bobs", created_by=bob, rate_limit=10)
    Invitation.objects.create(
        organization=acme, email="dave@example.com", token_hash="0" * 64, expires_at=day
    )
    callers = {
        "key": Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {ops}"),
        "alice": session(alice, acme),
        "bob": session(bob, acme),
    }
    ids = [ops_row.pk, bobs.pk, *Membership.objects.values_list("pk", flat=True)]
    return World(acme, callers, ids)


def ids_of(world: World) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(world.ids), st.sampled_from([0, 2**31, 2**63, 10**30]))


# The management API, walked from the URL conf ------------------------------------------------


def management_routes() -> Iterator[tuple[str, str, type]]:
    """(method, path pattern, view class) of every route under /api/manage/."""
    for top in get_resolver().url_patterns:
        if isinstance(top, URLResolver) and str(top.pattern) == "api/manage/":
            for route in top.url_patterns:
                assert isinstance(route, URLPattern)
                view = route.callback.cls  # type: ignore[attr-defined]  # DRF's as_view sets cls on the view
                for method in ("get", "post", "patch", "put", "delete"):
                    if hasattr(view, method) and method in view.http_method_names:
                        yield method, f"/api/manage/{route.pattern}", view


ROUTES = sorted({(method, path) for method, path, _ in management_routes()})
FIELDS = ["name", "kind", "credit_limit", "rate_limit", "expires_at", "id", "revoked"]
PARAMS = ["since", "until", "model", "provider", "status", "session", "app", "limit", "cursor"]


def test_the_walk_finds_every_management_route() -> None:
    paths = {path for _, path in ROUTES}
    assert {"/api/manage/keys/", "/api/manage/keys/<int:pk>/", "/api/manage/ledger/"} <= paths
    assert ("patch", "/api/manage/keys/<int:pk>/") in ROUTES
    assert ("post", "/api/manage/keys/<int:pk>/revoke/") in ROUTES


def fill(path: str, pk: int) -> str:
    return re.sub(r"<int:\w+>", str(pk), path)


@pytest.mark.parametrize(("method", "pattern"), ROUTES)
@PROPERTY
@given(data=st.data())
def test_the_management_api_never_fails_on_malformed_input(
    world: World, method: str, pattern: str, data: Any
) -> None:
    caller = data.draw(st.sampled_from(sorted(world.callers)))
    path = fill(pattern, data.draw(ids_of(world)))
    before = stored()
    client = world.callers[caller]
    if method == "get":
        response = client.get(path, data.draw(query(PARAMS)))
    else:
        body = data.draw(json_body(FIELDS))
        response = client.generic(method.upper(), path, body, content_type="application/json")
    assert_safe(response, before, f"{caller} {method} {path}")


# The members' UI ----------------------------------------------------------------------------

UI_POSTS = [
    ("/keys/", ["name", "credit_limit", "rate_limit"]),
    ("/keys/<int:pk>/limits/", ["credit_limit", "rate_limit"]),
    ("/provider-keys/", ["provider", "secret", "label", "zdr"]),
    ("/policy/", ["zdr_hold", "allow_deprecated", "max_model_age"]),
    ("/members/", ["email", "role"]),
    ("/members/<int:pk>/role/", ["role"]),
    ("/organization/", ["name"]),
    ("/organizations/switch/", ["organization"]),
]
UI_GETS = [
    ("/generations/", [*PARAMS[:7], "before", "after"]),
    ("/generations/export.csv", PARAMS[:7]),
    ("/usage/", ["days", "split"]),
    ("/v1/generation", ["id"]),
    ("/", ["days"]),
]


@pytest.mark.parametrize(("pattern", "fields"), UI_POSTS, ids=[p for p, _ in UI_POSTS])
@PROPERTY
@given(data=st.data())
def test_every_ui_form_refuses_malformed_input_without_a_500(
    world: World, pattern: str, fields: list[str], data: Any
) -> None:
    caller = data.draw(st.sampled_from(["alice", "bob"]))
    path = fill(pattern, data.draw(ids_of(world)))
    before = stored()
    response = world.callers[caller].post(path, data.draw(form(fields)))
    assert_safe(response, before, f"{caller} {path}")


@pytest.mark.parametrize(("path", "params"), UI_GETS, ids=[p for p, _ in UI_GETS])
@PROPERTY
@given(data=st.data())
def test_every_ui_filter_refuses_malformed_input_without_a_500(
    world: World, path: str, params: list[str], data: Any
) -> None:
    caller = data.draw(st.sampled_from(["alice", "bob"]))
    before = stored()
    response = world.callers[caller].get(path, data.draw(query(params)))
    assert_safe(response, before, f"{caller} {path}")


@PROPERTY
@given(request_id=texts)
def test_a_generation_page_of_any_id_is_no_500(world: World, request_id: str) -> None:
    path = f"/generations/{quote(request_id or 'x', safe='')}/"
    assert world.callers["alice"].get(path).status_code < 500


# Management commands ------------------------------------------------------------------------

SLUGS = st.one_of(st.just("acme"), texts)
Args = Callable[[Any], list[str]]


def options(data: Any, spec: dict[str, st.SearchStrategy[str]]) -> list[str]:
    """Some of a command's options, each with a drawn value."""
    argv: list[str] = []
    for flag, values in spec.items():
        if data.draw(st.booleans()):
            argv += [flag, data.draw(values)]
    return argv


COMMANDS: dict[str, Args] = {
    "create_org": lambda d: [d.draw(texts), *options(d, {"--name": texts, "--credits": texts})],
    "set_policy": lambda d: [
        *["--org", d.draw(SLUGS)],
        *options(d, {"--zdr": texts, "--deprecated": texts, "--max-age": texts}),
    ],
    "create_api_key": lambda d: [
        *["--org", d.draw(SLUGS)],
        *options(
            d,
            {
                "--name": texts,
                "--kind": texts,
                "--credit-limit": texts,
                "--rate-limit": texts,
                "--expires-in": texts,
            },
        ),
    ],
    "revoke_api_key": lambda d: [d.draw(texts)],
    "add_credits": lambda d: [
        *["--org", d.draw(SLUGS), d.draw(texts)],
        *options(d, {"--idempotency-key": texts}),
    ],
    "refund_call": lambda d: [
        d.draw(texts),
        *options(d, {"--amount": texts, "--note": texts, "--idempotency-key": texts}),
    ],
    "save_provider_key": lambda d: [
        *["--org", d.draw(SLUGS), "--provider", d.draw(texts), "--key-env", d.draw(texts)],
        *options(d, {"--label": texts}),
    ],
    "backfill_rollups": lambda d: options(d, {"--org": SLUGS, "--since": texts, "--until": texts}),
    "maintain_records": lambda d: options(d, {"--retention-days": texts}),
    "load_catalog": lambda d: [d.draw(texts)],
}


# The benchmark's seeding (`python -m bench.seed`) is no management command, but it reads and
# refuses its arguments as one does.
BENCH_COMMANDS: dict[str, Args] = {
    "bench.seed": lambda d: [
        *["--org", d.draw(SLUGS), "--count", d.draw(texts)],
        *options(d, {"--days": texts}),
    ],
}


def test_every_command_is_driven() -> None:
    from django.core.management import get_commands

    ours = {name for name, app in get_commands().items() if app in {"accounts", "billing"}}
    gateway = {name for name, app in get_commands().items() if app == "gateway"}
    without_arguments = {"reencrypt_secrets", "scrub_records"}
    assert ours | gateway == set(COMMANDS) | without_arguments


@pytest.mark.parametrize("name", sorted(COMMANDS | BENCH_COMMANDS))
@PROPERTY
@given(data=st.data())
def test_every_command_refuses_malformed_arguments_in_one_line(
    world: World, name: str, data: Any
) -> None:
    argv = (COMMANDS | BENCH_COMMANDS)[name](data)
    before = stored()
    command = seed.Command() if name in BENCH_COMMANDS else name
    try:
        call_command(command, *argv, stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        assert "\n" not in str(exc).strip(), f"{name} {argv!r}: {exc}"
        assert stored() == before, f"{name} {argv!r}: refused but stored"
