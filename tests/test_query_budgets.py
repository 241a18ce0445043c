"""Query budgets: every page of the members' UI and every list of the management API makes a
fixed number of database queries, within its budget, however many rows it shows. Each page is
read once with a row of each kind, then again after hundreds more (generations with their
attempts, API keys, members, invitations, ledger entries, saved provider keys, catalog
providers and models, and organizations the owner may switch to): the count must not move."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import (
    ApiKey,
    Invitation,
    KeyKind,
    Membership,
    Organization,
    Role,
    SavedKey,
    deployment_salt,
)
from accounts.secrets import encrypt_secret, hash_api_key, new_api_key, visible_prefix
from billing.models import Attempt, EntryKind, Generation, LedgerEntry
from billing.usage.lookup import generation_detail
from billing.usage.rollups import rollup_add
from gateway.models import Model, Provider, Region
from tests.conftest import make_key
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db

MANY = 300  # rows of each kind in the crowded organization


@dataclass
class Crowd:
    """Adds `count` rows of every kind to acme, numbered from where the last call stopped."""

    org: Organization
    owner: User
    busy: Generation  # the generation the detail page shows; it gains attempts too
    made: int = 0

    def add(self, count: int) -> None:
        numbers = range(self.made, self.made + count)
        people = self._people(numbers)
        keys = self._keys(numbers, people)
        generations = self._generations(numbers, keys)
        for generation in generations:
            rollup_add(generation)
        self._attempts(generations, numbers)
        self._ledger(numbers, generations)
        self._invitations(numbers)
        self._catalog(numbers)
        self._organizations(numbers)
        self.made += count

    def _people(self, numbers: range) -> list[User]:
        people = get_user_model().objects.bulk_create(
            get_user_model()(username=f"person{n}", email=f"person{n}@example.com") for n in numbers
        )
        roles = [Role.MEMBER, Role.ADMIN]
        Membership.objects.bulk_create(
            Membership(user=person, organization=self.org, role=roles[n % 2])
            for n, person in zip(numbers, people, strict=True)
        )
        return people

    def _keys(self, numbers: range, people: list[User]) -> list[ApiKey]:
        kinds = [KeyKind.INFERENCE, KeyKind.MANAGEMENT]
        keys = []
        for n, person in zip(numbers, people, strict=True):
            plain = new_api_key()
            creator = self.owner if n % 3 == 0 else person
            keys.append(
                ApiKey(
                    organization=self.org,
                    name=f"key{n}",
                    kind=kinds[n % 2],
                    prefix=visible_prefix(plain),
                    key_hash=hash_api_key(plain),
                    created_by=creator,
                    credit_limit=Decimal(n) if n % 4 == 0 else None,
                    revoked_at=timezone.now() if n % 5 == 0 else None,
                )
            )
        return ApiKey.objects.bulk_create(keys)

    def _generations(self, numbers: range, keys: list[ApiKey]) -> list[Generation]:
        now = timezone.now()
        return Generation.objects.bulk_create(
            Generation(
                request_id=uuid.uuid4().hex,
                organization=self.org,
                api_key=key,
                user=self.owner if n % 7 == 0 else None,
                model=f"publisher/model-{n % 9}",
                provider=f"provider{n % 5}",
                status="success" if n % 6 else "failed",
                prompt_tokens=n,
                completion_tokens=2 * n,
                cost=Decimal(n) / 1000,
                latency_ms=100 + n,
                created_at=now - timedelta(hours=n % (24 * 80)),
            )
            for n, key in zip(numbers, keys, strict=True)
        )

    def _attempts(self, generations: list[Generation], numbers: range) -> None:
        def attempt(generation: Generation, position: int) -> Attempt:
            return Attempt(
                generation=generation,
                created_at=generation.created_at,
                position=position,
                model="publisher/model",
                provider="provider",
                upstream_id="model",
                key_source="momor",
                http_status=200,
            )

        rows = [attempt(g, p) for g in generations for p in (1, 2)]
        rows += [attempt(self.busy, 2 + n) for n in numbers]
        Attempt.objects.bulk_create(rows)

    def _ledger(self, numbers: range, generations: list[Generation]) -> None:
        LedgerEntry.objects.bulk_create(
            LedgerEntry(
                organization=self.org,
                kind=EntryKind.CHARGE,
                amount=-generation.cost,
                balance_after=Decimal(100) - generation.cost,
                generation=generation if n % 2 else None,
                created_by=self.owner if n % 3 == 0 else None,
            )
            for n, generation in zip(numbers, generations, strict=True)
        )

    def _invitations(self, numbers: range) -> None:
        later = timezone.now() + timedelta(days=3)
        Invitation.objects.bulk_create(
            Invitation(
                organization=self.org,
                email=f"guest{n}@example.com",
                role=[Role.MEMBER, Role.ADMIN, Role.OWNER][n % 3],
                invited_by=self.owner,
                token_hash=uuid.uuid4().hex,
                expires_at=later,
            )
            for n in numbers
        )

    def _catalog(self, numbers: range) -> None:
        providers = Provider.objects.bulk_create(
            Provider(name=f"provider{n}", api="openai", base_url="https://p.example/v1")
            for n in numbers
        )
        Region.objects.bulk_create(
            Region(provider=provider, name="eu", base_url="https://eu.p.example/v1")
            for provider in providers
        )
        secret = encrypt_secret("saved-provider-key-0000", salt=deployment_salt)
        SavedKey.objects.bulk_create(
            SavedKey(organization=self.org, provider=f"provider{n}@eu", secret_encrypted=secret)
            for n in numbers
        )
        Model.objects.bulk_create(
            Model(id=f"publisher/model-{n}", tiers=[f"tier{n % 4}"], auto=n % 2 == 0)
            for n in numbers
        )

    def _organizations(self, numbers: range) -> None:
        """Organizations the owner also belongs to: the layout's switcher lists them all."""
        others = Organization.objects.bulk_create(
            Organization(slug=f"crowd-{n}", name=f"Crowd {n}") for n in numbers
        )
        Membership.objects.bulk_create(
            Membership(user=self.owner, organization=other, role=Role.MEMBER) for other in others
        )


@pytest.fixture
def crowd(acme: Organization, alice: User) -> Crowd:
    busy = Generation.objects.create(
        request_id="busy", organization=acme, status="success", created_at=timezone.now()
    )
    Attempt.objects.create(
        generation=busy, position=1, model="m", provider="p", upstream_id="m", key_source="own"
    )
    grown = Crowd(org=acme, owner=alice, busy=busy)
    grown.add(1)
    return grown


def queries(get: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = get()
    assert response.status_code == 200, response.content[:300]
    return len(captured)


def same_queries_when_crowded(
    get: Callable[[], Any], crowd: Crowd, budget: int, django_assert_max_num_queries: Any
) -> None:
    get()  # the session's first request may save it
    few = queries(get)
    crowd.add(MANY)
    with django_assert_max_num_queries(budget):
        many = queries(get)
    assert many == few


# The members' UI -------------------------------------------------------------------------

PAGES = {
    "/": 7,
    "/keys/": 6,
    "/provider-keys/": 7,
    "/policy/": 4,
    "/members/": 8,
    "/organization/": 4,
    "/billing/": 6,
    "/usage/": 5,
    "/generations/": 8,
    "/generations/?status=failed&since=2020-01-01&until=2999-12-31": 8,
    "/generations/export.csv": 6,
    "/generations/busy/": 6,
    # A process that holds no catalog snapshot yet (no call has loaded one) builds one to say
    # which models can answer: a fixed count, whatever the rows; the organization's budgets
    # are read with it, as a call's are.
    "/playground/": 19,
}


@pytest.mark.parametrize(("path", "budget"), PAGES.items(), ids=list(PAGES))
def test_a_page_makes_the_same_queries_with_hundreds_of_rows(
    alice: User, crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    client = signed_in(alice)
    get = partial(client.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


def test_the_live_generations_table_makes_the_same_queries(
    alice: User, crowd: Crowd, django_assert_max_num_queries: Any
) -> None:
    client = signed_in(alice)
    get = partial(client.get, "/generations/", headers={"HX-Request": "true"})
    same_queries_when_crowded(get, crowd, 7, django_assert_max_num_queries)


MEMBER_PAGES = {
    "/": 7,
    "/keys/": 6,
    "/usage/": 5,
    "/generations/": 8,
    "/generations/export.csv": 6,
    "/playground/": 19,  # the snapshot built once, as above
}


@pytest.mark.parametrize(("path", "budget"), MEMBER_PAGES.items(), ids=list(MEMBER_PAGES))
def test_a_members_page_makes_the_same_queries(
    bob: User, crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    make_key(crowd.org, name="bobs", created_by=bob)
    client = signed_in(bob)
    get = partial(client.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


def test_the_page_without_an_organization_makes_the_same_queries(
    crowd: Crowd, django_assert_max_num_queries: Any
) -> None:
    loner = get_user_model().objects.create_user("loner", "loner@example.com", "pw-loner-123")
    client = signed_in(loner)
    get = partial(client.get, "/welcome/")
    same_queries_when_crowded(get, crowd, 4, django_assert_max_num_queries)


SIGNED_OUT_PAGES = {"/accounts/login/": 0, "/accounts/password_reset/": 0}


@pytest.mark.parametrize(("path", "budget"), SIGNED_OUT_PAGES.items(), ids=list(SIGNED_OUT_PAGES))
def test_a_signed_out_page_makes_the_same_queries(
    crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    visitor = Client()
    get = partial(visitor.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


def test_a_members_key_page_makes_the_same_queries(
    bob: User, crowd: Crowd, django_assert_max_num_queries: Any
) -> None:
    make_key(crowd.org, name="bobs", created_by=bob)
    client = signed_in(bob)
    same_queries_when_crowded(lambda: client.get("/keys/"), crowd, 6, django_assert_max_num_queries)


def test_the_invitation_page_makes_the_same_queries(
    crowd: Crowd, django_assert_max_num_queries: Any, mailoutbox: list[Any]
) -> None:
    client = signed_in(crowd.owner)
    client.post("/members/", {"email": "newcomer@example.com", "role": "member"})
    link = mailoutbox[0].body.split("http://testserver", 1)[1].split()[0]
    visitor = Client()
    assert visitor.get(link).status_code == 302  # the token leaves the URL for the session
    page = partial(visitor.get, "/invitations/accept/")
    # its session too, and whether the organization requires single sign-on
    same_queries_when_crowded(page, crowd, 5, django_assert_max_num_queries)


# The management API's lists -------------------------------------------------------------

LISTS = {
    "/api/manage/keys/": 6,
    "/api/manage/ledger/": 4,
    "/api/manage/generations/": 5,
    "/api/manage/generations/?model=publisher/model-0&until=2999-12-31": 5,
    "/api/manage/credits/": 4,
}


@pytest.mark.parametrize(("path", "budget"), LISTS.items(), ids=list(LISTS))
def test_a_list_makes_the_same_queries_with_hundreds_of_rows_for_a_session(
    alice: User, crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    client = signed_in(alice)
    get = partial(client.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


MEMBER_LISTS = {
    "/api/manage/keys/": 6,
    "/api/manage/generations/": 5,
}


@pytest.mark.parametrize(("path", "budget"), MEMBER_LISTS.items(), ids=list(MEMBER_LISTS))
def test_a_list_makes_the_same_queries_with_hundreds_of_rows_for_a_member(
    bob: User, crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    make_key(crowd.org, name="bobs", created_by=bob)
    client = signed_in(bob)
    get = partial(client.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


@pytest.mark.parametrize(("path", "budget"), LISTS.items(), ids=list(LISTS))
def test_a_list_makes_the_same_queries_with_hundreds_of_rows_for_a_management_key(
    alice: User, crowd: Crowd, path: str, budget: int, django_assert_max_num_queries: Any
) -> None:
    plain, _ = make_key(crowd.org, kind=KeyKind.MANAGEMENT, created_by=alice)
    client = Client(headers={"authorization": f"Bearer {plain}"})
    get = partial(client.get, path)
    same_queries_when_crowded(get, crowd, budget, django_assert_max_num_queries)


# A call's record (`GET /v1/generation`) lists its attempts ------------------------------


def test_a_record_with_hundreds_of_attempts_takes_the_same_queries(
    crowd: Crowd, django_assert_max_num_queries: Any
) -> None:
    def record_queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            found = generation_detail("busy", crowd.org.id)
        assert found is not None
        return len(captured), len(found["attempts"])

    few, attempts_before = record_queries()
    crowd.add(MANY)
    with django_assert_max_num_queries(2):
        many, attempts_after = record_queries()
    assert (many, attempts_after) == (few, attempts_before + MANY)
