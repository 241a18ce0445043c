"""The management API under /api/manage/: keys, credits, ledger and generations, for a
management key and for members' sessions by role, with every refusal; and its schema."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest
from django.contrib.auth.models import User
from django.test import Client
from drf_spectacular.validation import validate_schema

from accounts.models import ApiKey, KeyKind, Organization, Role
from billing.admission import select, store
from billing.admission.base import AdmitRequest
from billing.api.money import HoldsUnknown
from billing.ledger.admission_sync import load_balance
from billing.models import Generation
from billing.recording.hand_off import drain, record_call
from tests.billing.conftest import HI, World
from tests.billing.records import an_embeddings_record
from tests.conftest import make_key, make_org, make_user
from tests.ui_helpers import streamed

BASE = "/api/manage"


def as_key(plain: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {plain}")


def as_member(user: Any, org: Organization) -> Client:
    client = Client()
    client.force_login(user)
    session = client.session
    session["momor_org_id"] = org.pk
    session.save()
    return client


def body(response: Any) -> Any:
    return orjson.loads(response.content)


@pytest.fixture
def management(acme: Organization) -> str:
    plain, _ = make_key(acme, name="ops", kind=KeyKind.MANAGEMENT)
    return plain


@pytest.fixture
def carol(acme: Organization) -> User:
    return make_user("carol", acme, Role.ADMIN)


# keys ----------------------------------------------------------------------------------


def test_a_management_key_lists_every_key_of_its_organization_and_no_other(
    acme: Organization, globex: Organization, bob: Any, management: str
) -> None:
    make_key(acme, name="bob's", created_by=bob)
    make_key(globex, name="globex's")

    response = as_key(management).get(f"{BASE}/keys/")

    assert response.status_code == 200
    names = sorted(k["name"] for k in body(response))
    assert names == ["bob's", "ops"]
    assert all("key" not in k and "key_hash" not in k for k in body(response))


def test_creating_a_key_shows_its_secret_once(acme: Organization, management: str) -> None:
    client = as_key(management)

    created = client.post(
        f"{BASE}/keys/",
        {"name": "ci", "rate_limit": 30, "credit_limit": "2.5"},
        content_type="application/json",
    )

    assert created.status_code == 201, created.content
    data = body(created)
    secret = data.pop("key")
    row = ApiKey.objects.get(pk=data["id"])
    assert secret.startswith(row.prefix)
    assert row.key_hash == ApiKey.lookup_hash(secret)
    assert (data["name"], data["kind"], data["rate_limit"]) == ("ci", "inference", 30)
    assert Decimal(data["credit_limit"]) == Decimal("2.5")
    assert data["revoked"] is False
    listed, detail = client.get(f"{BASE}/keys/"), client.get(f"{BASE}/keys/{row.pk}/")
    assert secret not in listed.content.decode() and secret not in detail.content.decode()
    assert "key" not in body(detail)


def test_patch_updates_a_keys_limits(acme: Organization, management: str) -> None:
    _, row = make_key(acme, name="old")
    client = as_key(management)

    patched = client.patch(
        f"{BASE}/keys/{row.pk}/",
        {"name": "new", "rate_limit": 7, "credit_limit": "1.25"},
        content_type="application/json",
    )
    invalid = client.patch(
        f"{BASE}/keys/{row.pk}/", {"rate_limit": 0}, content_type="application/json"
    )

    assert patched.status_code == 200, patched.content
    assert (body(patched)["name"], body(patched)["rate_limit"]) == ("new", 7)
    row.refresh_from_db()
    assert (row.rate_limit, row.credit_limit) == (7, Decimal("1.25"))
    assert invalid.status_code == 400
    assert "rate_limit" in body(invalid)


def test_another_organizations_key_is_not_found(
    globex: Organization, acme: Organization, management: str
) -> None:
    _, theirs = make_key(globex, name="theirs")
    client = as_key(management)

    answers = [
        client.get(f"{BASE}/keys/{theirs.pk}/"),
        client.patch(f"{BASE}/keys/{theirs.pk}/", {"rate_limit": 1}, "application/json"),
        client.post(f"{BASE}/keys/{theirs.pk}/revoke/"),
    ]

    assert [a.status_code for a in answers] == [404, 404, 404]
    theirs.refresh_from_db()
    assert (theirs.rate_limit, theirs.revoked_at) == (None, None)


def test_an_inference_key_or_no_credentials_are_refused(acme: Organization) -> None:
    inference, _ = make_key(acme, name="inference")

    with_inference = as_key(inference).get(f"{BASE}/keys/")
    with_nothing = Client().get(f"{BASE}/keys/")
    with_garbage = as_key("not-a-key").get(f"{BASE}/credits/")

    assert with_inference.status_code == 401
    assert body(with_inference) == {"detail": "Not a live management key."}
    assert with_nothing.status_code == 401
    assert with_nothing.headers["WWW-Authenticate"] == "Bearer"
    assert with_garbage.status_code == 401


def test_a_member_sees_and_manages_only_their_own_keys(
    acme: Organization, alice: Any, bob: Any
) -> None:
    _, own = make_key(acme, name="bob's", created_by=bob)
    _, alices = make_key(acme, name="alice's", created_by=alice)
    client = as_member(bob, acme)

    listed = client.get(f"{BASE}/keys/")
    others = client.get(f"{BASE}/keys/{alices.pk}/")
    revoke_others = client.post(f"{BASE}/keys/{alices.pk}/revoke/")
    management = client.post(
        f"{BASE}/keys/", {"kind": "management"}, content_type="application/json"
    )
    inference = client.post(f"{BASE}/keys/", {"name": "mine"}, content_type="application/json")

    assert [k["id"] for k in body(listed)] == [own.pk]
    assert (others.status_code, revoke_others.status_code) == (404, 404)
    assert management.status_code == 403
    assert inference.status_code == 201
    assert ApiKey.objects.get(pk=body(inference)["id"]).created_by == bob


def test_an_admin_creates_a_management_key_that_works_on_the_api(
    acme: Organization, carol: Any
) -> None:
    created = as_member(carol, acme).post(
        f"{BASE}/keys/", {"name": "ops", "kind": "management"}, content_type="application/json"
    )

    assert created.status_code == 201
    assert body(created)["kind"] == "management"
    assert as_key(body(created)["key"]).get(f"{BASE}/credits/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_revoked_key_stops_working_on_the_gateway_within_seconds(
    world: World, management_for_world: str
) -> None:
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": 5, "completion_tokens": 5})
    row = ApiKey.objects.get(key_hash=ApiKey.lookup_hash(world.key))
    call = {"model": "openai/gpt-5-mini", "messages": HI}
    assert world.post(call).status_code == 200

    revoked = as_key(management_for_world).post(f"{BASE}/keys/{row.pk}/revoke/")

    assert revoked.status_code == 200
    assert body(revoked)["revoked"] is True
    deadline = time.monotonic() + 5
    while (answer := world.post(call)).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "invalid_api_key"


@pytest.fixture
def management_for_world(world: World) -> str:
    plain, _ = make_key(world.org, name="ops", kind=KeyKind.MANAGEMENT)
    return plain


# credits and ledger --------------------------------------------------------------------


def test_credits_show_the_balance_and_open_reservations_to_admins(
    acme: Organization, alice: Any, carol: Any, bob: Any, management: str
) -> None:
    load_balance(acme.pk)
    request = AdmitRequest(
        reservation_id="r1",
        org_id=acme.pk,
        key_tag="k0",
        amount=2_500_000_000,  # $2.5
        rate_limit=0,
        now_ms=int(time.time() * 1000),
        ttl_ms=60_000,
    )
    asyncio.run(store().admit(request))

    answers = {
        "key": as_key(management).get(f"{BASE}/credits/"),
        "owner": as_member(alice, acme).get(f"{BASE}/credits/"),
        "admin": as_member(carol, acme).get(f"{BASE}/credits/"),
    }
    member = as_member(bob, acme).get(f"{BASE}/credits/")

    expected = {
        "balance": "100.000000000",
        "available": "97.500000000",
        "open_reservations": [{"id": "r1", "amount": "2.500000000"}],
        "unposted_charges": "0.000000000",
    }
    assert {who: (a.status_code, body(a)) for who, a in answers.items()} == {
        who: (200, expected) for who in answers
    }
    assert member.status_code == 403


def test_credits_answer_503_not_500_while_redis_is_down(
    acme: Organization, management: str, settings: Any
) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    select.store.cache_clear()

    answer = as_key(management).get(f"{BASE}/credits/")

    assert answer.status_code == 503
    assert body(answer) == {"detail": HoldsUnknown.default_detail}


def test_the_ledger_pages_by_cursor_for_admins_only(
    acme: Organization, bob: Any, management: str
) -> None:
    from billing.ledger.posting import ledger_post
    from billing.models import EntryKind

    for amount in ("1", "2", "3"):
        ledger_post(organization_id=acme.pk, kind=EntryKind.TOPUP, amount=Decimal(amount))
    client = as_key(management)

    first = body(client.get(f"{BASE}/ledger/", {"limit": 2}))
    second = body(client.get(first["next"]))
    member = as_member(bob, acme).get(f"{BASE}/ledger/")

    amounts = [e["amount"] for e in first["results"] + second["results"]]
    assert amounts == ["3.000000000", "2.000000000", "1.000000000", "100.000000000"]
    assert [e["balance_after"] for e in first["results"]] == ["106.000000000", "103.000000000"]
    assert second["next"] is None
    assert member.status_code == 403


# generations ---------------------------------------------------------------------------


def generation(org: Organization, name: str, hours_ago: int, **fields: Any) -> Generation:
    values: dict[str, Any] = {
        "model": "openai/gpt-5",
        "provider": "openai",
        "status": "success",
        "cost": Decimal("0.001"),
    }
    values.update(fields)
    return Generation.objects.create(
        request_id=name,
        organization=org,
        created_at=datetime.now(tz=UTC) - timedelta(hours=hours_ago),
        **values,
    )


@pytest.fixture
def history(acme: Organization, globex: Organization) -> None:
    generation(acme, "g1", 5)
    generation(acme, "g2", 4, provider="azure@eu")
    generation(acme, "g3", 3, model="openai/gpt-5-mini")
    generation(acme, "g4", 2, status="failed", http_status=503)
    generation(acme, "g5", 1)
    generation(globex, "theirs", 1)


def ids(response: Any) -> list[str]:
    return [g["id"] for g in body(response)["results"]]


@pytest.mark.usefixtures("history")
def test_generations_filter_by_model_provider_status_and_dates(
    acme: Organization, management: str
) -> None:
    client = as_key(management)
    since = (datetime.now(tz=UTC) - timedelta(hours=4, minutes=30)).isoformat()
    until = (datetime.now(tz=UTC) - timedelta(hours=1, minutes=30)).isoformat()

    assert ids(client.get(f"{BASE}/generations/")) == ["g5", "g4", "g3", "g2", "g1"]
    assert ids(client.get(f"{BASE}/generations/", {"model": "openai/gpt-5-mini"})) == ["g3"]
    assert ids(client.get(f"{BASE}/generations/", {"provider": "azure@eu"})) == ["g2"]
    assert ids(client.get(f"{BASE}/generations/", {"status": "failed"})) == ["g4"]
    window = client.get(f"{BASE}/generations/", {"since": since, "until": until})
    assert ids(window) == ["g4", "g3", "g2"]
    bad = client.get(f"{BASE}/generations/", {"since": "yesterday"})
    assert bad.status_code == 400
    assert "since" in body(bad)


@pytest.mark.usefixtures("history")
def test_generations_page_by_cursor_with_next_links(
    acme: Organization, bob: Any, management: str
) -> None:
    client = as_key(management)
    seen: list[str] = []
    url: str | None = f"{BASE}/generations/?limit=2"
    pages = 0
    while url:
        page = body(client.get(url))
        seen += [g["id"] for g in page["results"]]
        url, pages = page["next"], pages + 1

    assert seen == ["g5", "g4", "g3", "g2", "g1"]
    assert pages == 3
    member = as_member(bob, acme).get(f"{BASE}/generations/", {"limit": 2})
    assert member.status_code == 200  # every member reads the organization's records
    assert ids(member) == ["g5", "g4"]


def test_until_means_what_it_means_in_the_ui_a_whole_day_or_a_moment_included(
    acme: Organization, alice: Any, management: str
) -> None:
    january = {
        "30th": datetime(2026, 1, 30, 12, tzinfo=UTC),
        "31st-start": datetime(2026, 1, 31, tzinfo=UTC),
        "31st-end": datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC),
        "1st": datetime(2026, 2, 1, tzinfo=UTC),
    }
    for name, moment in january.items():
        Generation.objects.create(
            request_id=name, organization=acme, status="success", created_at=moment
        )
    client = as_key(management)
    days = {"since": "2026-01-31", "until": "2026-01-31"}

    assert ids(client.get(f"{BASE}/generations/", days)) == ["31st-end", "31st-start"]
    moment = {"until": "2026-01-31T00:00:00Z"}
    assert ids(client.get(f"{BASE}/generations/", moment)) == ["31st-start", "30th"]
    export = as_member(alice, acme).get("/generations/export.csv", days)
    assert sorted(row.split(",")[0] for row in streamed(export).splitlines()[1:]) == [
        "31st-end",
        "31st-start",
    ]


@pytest.mark.parametrize("value", ["2026-02-30", "2026-02-30T00:00Z", "2026-01-31T25:00"])
def test_a_day_or_time_that_does_not_exist_is_refused(management: str, value: str) -> None:
    refused = as_key(management).get(f"{BASE}/generations/", {"until": value})
    assert refused.status_code == 400
    assert list(body(refused)) == ["until"]


# schema --------------------------------------------------------------------------------


def test_the_openapi_schema_is_served_and_valid(alice: Any, acme: Organization) -> None:
    """To a signed-in member (tests/security/test_api_docs.py: to nobody else)."""
    response = as_member(alice, acme).get(f"{BASE}/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = body(response)
    validate_schema(schema)  # raises on anything OpenAPI 3 does not allow
    assert schema["openapi"].startswith("3.")
    assert {
        "/api/manage/keys/",
        "/api/manage/keys/{id}/",
        "/api/manage/keys/{id}/revoke/",
        "/api/manage/credits/",
        "/api/manage/ledger/",
        "/api/manage/generations/",
    } <= set(schema["paths"])


def test_the_api_is_reachable_over_http(world: World, management_for_world: str) -> None:
    """The same routes through the real server (ASGI, not the test client)."""
    response = httpx.get(
        world.url + f"{BASE}/credits/",
        headers={"authorization": f"Bearer {management_for_world}"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json()["balance"] == "100.000000000"


def test_other_organizations_do_not_leak_into_lists(
    globex: Organization, mallory: Any, acme: Organization
) -> None:
    make_key(acme, name="acme's")
    generation(acme, "acme-only", 1)

    client = as_member(mallory, globex)

    assert body(client.get(f"{BASE}/keys/")) == []
    assert body(client.get(f"{BASE}/generations/"))["results"] == []
    assert [e["amount"] for e in body(client.get(f"{BASE}/ledger/"))["results"]] == [
        "100.000000000"
    ]


def test_an_organization_id_in_the_session_that_is_not_the_users_is_ignored(
    acme: Organization, globex: Organization, mallory: Any
) -> None:
    make_org("initech")
    client = as_member(mallory, acme)  # mallory is not a member of acme

    assert body(client.get(f"{BASE}/credits/"))["balance"] == "100.000000000"  # globex's
    assert body(client.get(f"{BASE}/generations/"))["results"] == []


def test_generations_say_which_api_was_called_and_filter_by_it(
    world: World, management_for_world: str
) -> None:
    """Over HTTP: a Chat Completions call made to the gateway, and a record of another API
    handed off through the real record path, as the embeddings route hands its calls off."""
    served = world.post({"model": "openai/gpt-5", "messages": HI})
    assert served.status_code == 200, served.text
    chat = served.headers["x-momor-request-id"]
    embedded = an_embeddings_record(world.org.pk)
    asyncio.run(record_call(embedded))
    assert drain()

    def listed(**params: str) -> httpx.Response:
        return httpx.get(
            world.url + f"{BASE}/generations/",
            params=params,
            headers={"authorization": f"Bearer {management_for_world}"},
            timeout=10,
        )

    every = {g["id"]: g["api"] for g in listed().json()["results"]}
    assert every == {chat: "chat", embedded.request_id: "embeddings"}
    assert [g["id"] for g in listed(api="embeddings").json()["results"]] == [embedded.request_id]
    assert [g["id"] for g in listed(api="chat").json()["results"]] == [chat]
    refused = listed(api="images")
    assert refused.status_code == 400
    assert refused.json() == {"api": "One of chat, messages, responses, embeddings."}
