"""Shared fixtures: personas (alice owns acme, bob is a member of acme, mallory is an outsider

who owns globex) and small factories."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from accounts.models import ApiKey, Membership, Organization, Role
from accounts.secrets import hash_api_key, new_api_key, visible_prefix

pytest_plugins = [
    "tests.fake_upstream_fixture",
    "tests.parallel",
    "tests.server_fixture",
    "tests.webhook_receiver",
]

django_settings.PASSWORD_HASHERS = ["tests.password_hashing.FewIterations"]


def make_org(slug: str, *, credits: Decimal = Decimal(0), **policy: object) -> Organization:
    org = Organization.objects.create(slug=slug, name=slug.title(), **policy)
    if credits:
        from billing.ledger.posting import ledger_post
        from billing.models import EntryKind

        ledger_post(organization_id=org.pk, kind=EntryKind.TOPUP, amount=credits)
        org.refresh_from_db()
    return org


def make_user(username: str, org: Organization | None = None, role: str = Role.MEMBER) -> User:
    user = get_user_model().objects.create_user(
        username=username, email=f"{username}@example.com", password=f"{username}-pass-123!"
    )
    if org is not None:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


def make_key(org: Organization, **fields: object) -> tuple[str, ApiKey]:
    """A fresh API key: the plain secret and its row."""
    plain = new_api_key()
    row = ApiKey.objects.create(
        organization=org, prefix=visible_prefix(plain), key_hash=hash_api_key(plain), **fields
    )
    return plain, row


@pytest.fixture
def acme(db: None) -> Organization:
    return make_org("acme", credits=Decimal(100))


@pytest.fixture
def globex(db: None) -> Organization:
    return make_org("globex", credits=Decimal(100))


@pytest.fixture
def alice(acme: Organization) -> User:
    return make_user("alice", acme, Role.OWNER)


@pytest.fixture
def bob(acme: Organization) -> User:
    return make_user("bob", acme, Role.MEMBER)


@pytest.fixture
def mallory(globex: Organization) -> User:
    return make_user("mallory", globex, Role.OWNER)


@pytest.fixture(scope="session")
def journal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test session's own journal directory (never the checkout's `var/journal`)."""
    return tmp_path_factory.mktemp("journal")


@pytest.fixture(autouse=True)
def _records_stored_in_process(
    request: pytest.FixtureRequest, settings: Any, journal_dir: Path
) -> None:
    """Records are stored by the gateway's own consumer of the records stream unless a test
    runs a Celery worker (marked `celery`): a stream with no consumer keeps them from the
    database. A gateway served in the test's own process (its settings overridden, its database
    the test's) stores the journal on a thread: a storing process would read the environment's."""
    settings.MOMOR_JOURNAL_DIR = journal_dir
    settings.MOMOR_JOURNAL_STORER = "thread"
    settings.MOMOR_RECORD_IN_GATEWAY = request.node.get_closest_marker("celery") is None
