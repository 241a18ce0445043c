"""The operators' account commands: set_policy, create_api_key, revoke_api_key and save_provider_key
(create_org, billing's, in tests/billing/ledger/test_create_org.py). Each prints one line on success
and refuses bad input with one line; run as a real process, each bad argument (create_org's too)
exits non-zero with that line alone."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from accounts.models import ApiKey, Organization, SavedKey
from accounts.secrets import hash_api_key
from accounts.services import (
    UNCHANGED,
    AccountError,
    api_key_create,
    api_key_revoke_by_text,
    organization_set_policy,
)
from gateway.models import Provider, Region
from tests.child_process import manage
from tests.conftest import make_key

KEY_SHAPE = re.compile(r"^sk-momor-[A-Za-z0-9_-]{43}$")


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


# set_policy ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_set_policy_sets_each_part_and_prints_the_policy(acme: Organization) -> None:
    out = run(
        "set_policy", "--org", "acme", "--zdr", "on", "--deprecated", "on", "--max-age", "P6M"
    )
    assert out == "acme: zdr hold on, deprecated models on, max model age P180D\n"
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.allow_deprecated, acme.max_model_age) == (
        True,
        True,
        timedelta(days=180),
    )


@pytest.mark.django_db
def test_set_policy_reads_a_timespan(acme: Organization) -> None:
    assert run("set_policy", "--org", "acme", "--max-age", "90.00:00:00") == (
        "acme: zdr hold off, deprecated models off, max model age P90D\n"
    )


@pytest.mark.django_db
def test_set_policy_turns_switches_off_and_lifts_the_age_limit(acme: Organization) -> None:
    organization_set_policy(
        organization=acme, zdr_hold=True, allow_deprecated=True, max_model_age=timedelta(days=30)
    )
    out = run(
        "set_policy", "--org", "acme", "--zdr", "off", "--deprecated", "OFF", "--max-age", "none"
    )
    assert out == "acme: zdr hold off, deprecated models off, max model age none\n"
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.allow_deprecated, acme.max_model_age) == (False, False, None)


@pytest.mark.django_db
def test_set_policy_leaves_alone_what_it_is_not_given(acme: Organization) -> None:
    organization_set_policy(organization=acme, zdr_hold=True, max_model_age=timedelta(days=30))
    assert run("set_policy", "--org", "acme", "--deprecated", "on") == (
        "acme: zdr hold on, deprecated models on, max model age P30D\n"
    )
    assert run("set_policy", "--org", "acme") == (
        "acme: zdr hold on, deprecated models on, max model age P30D\n"
    )


@pytest.mark.django_db
def test_the_policy_service_keeps_the_age_limit_unless_given_one(acme: Organization) -> None:
    organization_set_policy(organization=acme, max_model_age=timedelta(days=30))
    organization_set_policy(organization=acme, zdr_hold=True, max_model_age=UNCHANGED)
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.max_model_age) == (True, timedelta(days=30))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--org", "initech"], "unknown organization 'initech'"),
        (["--org", "acme", "--zdr", "maybe"], "--zdr must be on or off, not 'maybe'"),
        (["--org", "acme", "--deprecated", "yes"], "--deprecated must be on or off, not 'yes'"),
        (
            ["--org", "acme", "--max-age", "6 months"],
            "--max-age: '6 months' is not an ISO 8601 duration (P6M) or a TimeSpan (180.00:00:00)",
        ),
        (["--org", "acme", "--max-age", "P0D"], "the maximum model age must be longer than zero"),
    ],
    ids=["unknown-org", "zdr", "deprecated", "duration", "zero-age"],
)
def test_set_policy_refuses_bad_arguments(
    acme: Organization, args: list[str], message: str
) -> None:
    assert refusal("set_policy", *args) == message
    acme.refresh_from_db()
    assert (acme.zdr_hold, acme.allow_deprecated, acme.max_model_age) == (False, False, None)


# create_api_key ------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_api_key_prints_the_key_alone(acme: Organization) -> None:
    out = run("create_api_key", "--org", "acme")
    assert out.endswith("\n")
    assert out.count("\n") == 1
    assert KEY_SHAPE.match(out.strip())


@pytest.mark.django_db
def test_create_api_key_stores_the_key_only_as_its_hash(acme: Organization) -> None:
    plain = run("create_api_key", "--org", "acme", "--name", "ci").strip()
    row = ApiKey.objects.get()
    assert (row.organization, row.name) == (acme, "ci")
    assert row.key_hash == hash_api_key(plain)
    assert row.prefix == plain[:15]
    stored = ApiKey.objects.filter(pk=row.pk).values().get()
    assert not [field for field, value in stored.items() if plain in str(value)]
    assert api_key_revoke_by_text(plain) == row
    row.refresh_from_db()
    assert row.revoked_at is not None


@pytest.mark.django_db
def test_create_api_key_sets_its_limits_and_expiry(acme: Organization) -> None:
    before = timezone.now()
    run(
        "create_api_key",
        "--org",
        "acme",
        "--credit-limit",
        "5.25",
        "--rate-limit",
        "60",
        "--expires-in",
        "P30D",
    )
    row = ApiKey.objects.get()
    assert (row.credit_limit, row.rate_limit) == (Decimal("5.25"), 60)
    assert row.expires_at is not None
    assert before + timedelta(days=30) <= row.expires_at <= timezone.now() + timedelta(days=30)


@pytest.mark.django_db
def test_the_key_service_records_who_created_a_key(acme: Organization, alice: User) -> None:
    plain, row = api_key_create(organization=acme, name="laptop", created_by=alice)
    assert (row.created_by, row.name) == (alice, "laptop")
    assert KEY_SHAPE.match(plain)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--org", "initech"], "unknown organization 'initech'"),
        (["--org", "acme", "--credit-limit", "lots"], "'lots' is not an amount of USD"),
        (["--org", "acme", "--credit-limit", "-1"], "the credit limit must not be negative"),
        (
            ["--org", "acme", "--rate-limit", "ten"],
            "--rate-limit must be a whole number of requests per minute, not 'ten'",
        ),
        (
            ["--org", "acme", "--rate-limit", "0"],
            "the rate limit must be at least 1 request per minute",
        ),
        (
            ["--org", "acme", "--expires-in", "soon"],
            "--expires-in: 'soon' is not an ISO 8601 duration (P6M) or a TimeSpan (180.00:00:00)",
        ),
        (["--org", "acme", "--expires-in", "PT0S"], "the expiry must be in the future"),
        (["--org", "acme", "--name", "n" * 101], "the key's name is longer than 100 characters"),
    ],
    ids=[
        "unknown-org",
        "credit-limit",
        "negative-limit",
        "rate-limit",
        "zero-rate",
        "duration",
        "zero-duration",
        "long-name",
    ],
)
def test_create_api_key_refuses_bad_arguments(
    acme: Organization, args: list[str], message: str
) -> None:
    assert refusal("create_api_key", *args) == message
    assert not ApiKey.objects.exists()


# revoke_api_key ------------------------------------------------------------------------


@pytest.mark.django_db
def test_revoke_api_key_revokes_a_key_given_whole(acme: Organization) -> None:
    plain, row = make_key(acme, name="ci")
    assert run("revoke_api_key", plain) == f"acme: revoked {row.prefix}… (ci)\n"
    row.refresh_from_db()
    assert row.revoked_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize("shown", ["{prefix}", "{prefix}…", "{prefix}...", "{start}"])
def test_revoke_api_key_takes_an_unambiguous_prefix(acme: Organization, shown: str) -> None:
    _, row = make_key(acme)
    _, other = make_key(acme)
    text = shown.format(prefix=row.prefix, start=row.prefix[:-1])
    if other.prefix.startswith(text):  # one chance in 64 that the shortened prefix is shared
        pytest.skip("the two random keys share the shortened prefix")
    assert run("revoke_api_key", text) == f"acme: revoked {row.prefix}… (unnamed)\n"
    row.refresh_from_db()
    other.refresh_from_db()
    assert (row.revoked_at is not None, other.revoked_at) == (True, None)


@pytest.mark.django_db
def test_revoking_a_revoked_key_leaves_it_as_it_was(acme: Organization) -> None:
    plain, row = make_key(acme, name="old")
    api_key_revoke_by_text(plain)
    row.refresh_from_db()
    revoked_at = row.revoked_at
    assert run("revoke_api_key", plain) == f"acme: revoked {row.prefix}… (old)\n"
    row.refresh_from_db()
    assert row.revoked_at == revoked_at


@pytest.mark.django_db
def test_revoke_api_key_refuses_an_ambiguous_prefix(
    acme: Organization, globex: Organization
) -> None:
    ApiKey.objects.create(organization=acme, prefix="sk-momor-aaaaa1", key_hash="1" * 64)
    ApiKey.objects.create(organization=globex, prefix="sk-momor-aaaaa2", key_hash="2" * 64)
    assert refusal("revoke_api_key", "sk-momor-aaaaa") == (
        "several API keys start with 'sk-momor-aaaaa': give more of the key"
    )
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


@pytest.mark.django_db
def test_revoke_api_key_never_echoes_a_whole_key_it_does_not_know(acme: Organization) -> None:
    make_key(acme)
    unknown = "sk-momor-" + "x" * 43
    message = refusal("revoke_api_key", unknown)
    assert message == "no API key matches: give the whole key or its first 15 characters"
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sk-momor-!", "no API key starts with 'sk-momor-!'"),
        ("sk-momor-", "'sk-momor-' is not a Momor API key or the start of one"),
        ("hello", "'hello' is not a Momor API key or the start of one"),
        ("", "'' is not a Momor API key or the start of one"),
    ],
)
def test_revoke_api_key_refuses_what_matches_no_key(
    acme: Organization, text: str, message: str
) -> None:
    make_key(acme)
    assert refusal("revoke_api_key", text) == message
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


def test_the_revoke_service_raises_a_clear_error() -> None:
    with pytest.raises(AccountError) as caught:
        api_key_revoke_by_text("nope")
    assert str(caught.value) == "'nope' is not a Momor API key or the start of one"


# save_provider_key ---------------------------------------------------------------------


@pytest.fixture
def providers(db: None) -> None:
    Provider.objects.create(name="openai", api="openai", base_url="https://api.openai.com/v1")
    azure = Provider.objects.create(
        name="azure", api="azure", base_url="https://momor.openai.azure.com/openai/v1"
    )
    Region.objects.create(
        provider=azure, name="eu", base_url="https://momor-eu.openai.azure.com/openai/v1"
    )


AZURE_SECRET = "azure-secret-0123456789abcdef"


@pytest.mark.usefixtures("providers")
def test_save_provider_key_saves_a_regions_key_encrypted(
    acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_AZURE_KEY", AZURE_SECRET)
    out = run(
        "save_provider_key",
        "--org",
        "acme",
        "--provider",
        "azure@eu",
        "--key-env",
        "ACME_AZURE_KEY",
        "--zdr",
        "--label",
        "EU contract",
    )
    assert out == "acme: saved key for azure@eu, zdr on\n"
    saved = SavedKey.objects.get()
    assert (saved.organization, saved.provider, saved.zdr, saved.label) == (
        acme,
        "azure@eu",
        True,
        "EU contract",
    )
    assert saved.secret == AZURE_SECRET
    assert AZURE_SECRET not in saved.secret_encrypted
    assert saved.suffix == "cdef"


@pytest.mark.usefixtures("providers")
def test_save_provider_key_replaces_the_key_for_that_provider(
    acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRST", "sk-first-0000000000000")
    monkeypatch.setenv("SECOND", "sk-second-111111111111\n")
    run("save_provider_key", "--org", "acme", "--provider", "openai", "--key-env", "FIRST", "--zdr")
    out = run("save_provider_key", "--org", "acme", "--provider", "openai", "--key-env", "SECOND")
    assert out == "acme: saved key for openai, zdr off\n"
    saved = SavedKey.objects.get()
    assert (saved.secret, saved.zdr) == ("sk-second-111111111111", False)


@pytest.mark.usefixtures("providers")
@pytest.mark.parametrize(
    ("org", "place", "variable", "message"),
    [
        ("initech", "openai", "SET", "unknown organization 'initech'"),
        ("acme", "bedrock", "SET", "unknown provider 'bedrock'"),
        ("acme", "bedrock@eu", "SET", "unknown provider 'bedrock'"),
        ("acme", "azure@mars", "SET", "unknown region 'azure@mars'"),
        ("acme", "openai@eu", "SET", "unknown region 'openai@eu'"),
        ("acme", "azure@", "SET", "'azure@' is not a provider name or name@region"),
        ("acme", "a@b@c", "SET", "'a@b@c' is not a provider name or name@region"),
        ("acme", "openai", "UNSET", "the environment variable UNSET is not set"),
        ("acme", "openai", "EMPTY", "the environment variable EMPTY is empty"),
    ],
)
def test_save_provider_key_refuses_bad_arguments(
    acme: Organization,
    monkeypatch: pytest.MonkeyPatch,
    org: str,
    place: str,
    variable: str,
    message: str,
) -> None:
    monkeypatch.setenv("SET", AZURE_SECRET)
    monkeypatch.setenv("EMPTY", "  ")
    monkeypatch.delenv("UNSET", raising=False)
    args = ["--org", org, "--provider", place, "--key-env", variable]
    assert refusal("save_provider_key", *args) == message
    assert AZURE_SECRET not in message
    assert not SavedKey.objects.exists()


@pytest.mark.usefixtures("providers")
@override_settings(ENCRYPTION_KEY="")
def test_save_provider_key_refuses_to_store_a_key_without_an_encryption_key(
    acme: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SET", AZURE_SECRET)
    args = ["--org", "acme", "--provider", "openai", "--key-env", "SET"]
    assert refusal("save_provider_key", *args) == (
        "MOMOR_ENCRYPTION_KEY is required to store provider keys"
    )


# In a real process: the exit status, and nothing but the line on stderr ------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["create_org", "acme"], "CommandError: organization 'acme' already exists\n"),
        (
            ["set_policy", "--org", "acme", "--max-age", "six months"],
            "CommandError: --max-age: 'six months' is not an ISO 8601 duration (P6M) or a "
            "TimeSpan (180.00:00:00)\n",
        ),
        (["create_api_key", "--org", "initech"], "CommandError: unknown organization 'initech'\n"),
        (
            ["save_provider_key", "--org", "acme", "--provider", "openai", "--key-env", "UNSET"],
            "CommandError: the environment variable UNSET is not set\n",
        ),
        (["revoke_api_key", "sk-momor-!"], "CommandError: no API key starts with 'sk-momor-!'\n"),
    ],
    ids=["create_org", "set_policy", "create_api_key", "save_provider_key", "revoke_api_key"],
)
def test_a_bad_argument_exits_non_zero_with_one_line_and_no_traceback(
    acme: Organization, args: list[str], stderr: str
) -> None:
    done = manage(*args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", stderr)


@pytest.mark.django_db(transaction=True)
def test_create_api_key_prints_the_key_alone_in_a_real_process(acme: Organization) -> None:
    done = manage("create_api_key", "--org", "acme", "--name", "deploy")
    assert (done.returncode, done.stderr) == (0, "")
    plain = done.stdout.removesuffix("\n")
    assert KEY_SHAPE.match(plain)
    assert ApiKey.objects.get(key_hash=hash_api_key(plain)).name == "deploy"
