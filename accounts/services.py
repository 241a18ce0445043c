"""Account services: the multi-step writes on organizations, API keys and saved provider keys.

Each takes keyword arguments and refuses bad input with an AccountError whose message is one
line an operator can read. None of them ever puts a secret in a message."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import TYPE_CHECKING, Final

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from accounts.models import ApiKey, Membership, Organization, Role, SavedKey
from accounts.secrets import (
    API_KEY_PREFIX,
    VISIBLE_PREFIX_LENGTH,
    hash_api_key,
    new_api_key,
    visible_prefix,
)
from billing.ledger import ledger_post
from billing.models import EntryKind

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
_PLACE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_USD_PLACES = 9  # the ledger's and the keys' money fields: 18 digits, 9 of them decimal
_USD_CEILING = Decimal(10) ** (18 - _USD_PLACES)


class AccountError(Exception):
    """A refused account operation; the message is one line, fit to show an operator."""


class Unchanged(Enum):
    """The type of UNCHANGED: a policy field left as it is (None there means "no limit")."""

    UNCHANGED = "unchanged"


UNCHANGED: Final = Unchanged.UNCHANGED


# Amounts -------------------------------------------------------------------------------


def parse_usd(text: str) -> Decimal:
    """An amount of USD as an operator types it (12, 12.50): finite, at most 9 places."""
    try:
        amount = Decimal(text.strip())
    except InvalidOperation:
        raise AccountError(f"'{text}' is not an amount of USD") from None
    if not amount.is_finite() or abs(amount) >= _USD_CEILING:
        raise AccountError(f"'{text}' is not an amount of USD")
    if amount != round(amount, _USD_PLACES):
        raise AccountError(f"'{text}' has more than {_USD_PLACES} decimal places")
    return amount


def format_usd(amount: Decimal) -> str:
    """12.500000000 as '12.50 USD': trailing zeros dropped, but always cents."""
    whole, _, fraction = f"{amount.normalize():f}".partition(".")
    return f"{whole}.{fraction.ljust(2, '0')} USD"


# Organizations -------------------------------------------------------------------------


def organization_by_slug(slug: str) -> Organization:
    try:
        return Organization.objects.get(slug=slug)
    except Organization.DoesNotExist:
        raise AccountError(f"unknown organization '{slug}'") from None


def organization_create(
    *, slug: str, name: str = "", credits: Decimal | None = None, zdr_hold: bool = False
) -> Organization:
    """Create an organization; its first credits are posted to the ledger as a top-up."""
    if not _SLUG.match(slug):
        raise AccountError(f"'{slug}' is not a slug: use lowercase letters, digits, - and _")
    if credits is not None and credits < 0:
        raise AccountError("credits must not be negative")
    try:
        with transaction.atomic():
            organization = Organization.objects.create(
                slug=slug, name=name or slug, zdr_hold=zdr_hold
            )
            if credits:
                ledger_post(
                    organization_id=organization.pk,
                    kind=EntryKind.TOPUP,
                    amount=credits,
                    note="initial credits",
                )
    except IntegrityError:
        raise AccountError(f"organization '{slug}' already exists") from None
    organization.refresh_from_db()
    return organization


def organization_set_policy(
    *,
    organization: Organization,
    zdr_hold: bool | None = None,
    allow_deprecated: bool | None = None,
    max_model_age: timedelta | Unchanged | None = UNCHANGED,
) -> Organization:
    """Change the parts of the policy given; max_model_age=None lifts the age limit."""
    changes: dict[str, object] = {}
    if zdr_hold is not None:
        changes["zdr_hold"] = zdr_hold
    if allow_deprecated is not None:
        changes["allow_deprecated"] = allow_deprecated
    if not isinstance(max_model_age, Unchanged):
        if max_model_age is not None and max_model_age <= timedelta(0):
            raise AccountError("the maximum model age must be longer than zero")
        changes["max_model_age"] = max_model_age
    for name, value in changes.items():
        setattr(organization, name, value)
    if changes:
        organization.save(update_fields=[*changes, "updated_at"])
    return organization


# API keys ------------------------------------------------------------------------------


def _check_key_fields(
    name: str, credit_limit: Decimal | None, rate_limit: int | None, expires_at: datetime | None
) -> None:
    if len(name) > 100:
        raise AccountError("the key's name is longer than 100 characters")
    if credit_limit is not None and credit_limit < 0:
        raise AccountError("the credit limit must not be negative")
    if rate_limit is not None and rate_limit < 1:
        raise AccountError("the rate limit must be at least 1 request per minute")
    if expires_at is not None and expires_at <= timezone.now():
        raise AccountError("the expiry must be in the future")


def api_key_create(
    *,
    organization: Organization,
    name: str = "",
    created_by: User | None = None,
    credit_limit: Decimal | None = None,
    rate_limit: int | None = None,
    expires_at: datetime | None = None,
) -> tuple[str, ApiKey]:
    """Create a key: the plain key is returned this once, and only its hash is stored."""
    _check_key_fields(name, credit_limit, rate_limit, expires_at)
    plain = new_api_key()
    key = ApiKey.objects.create(
        organization=organization,
        name=name,
        prefix=visible_prefix(plain),
        key_hash=hash_api_key(plain),
        created_by=created_by,
        credit_limit=credit_limit,
        rate_limit=rate_limit,
        expires_at=expires_at,
    )
    return plain, key


def _api_key_by_whole_key(text: str) -> ApiKey:
    key = ApiKey.objects.filter(key_hash=hash_api_key(text)).first()
    if key is None:
        raise AccountError(
            f"no API key matches: give the whole key or its first {VISIBLE_PREFIX_LENGTH} "
            "characters"
        )
    return key


def _api_key_by_prefix(text: str) -> ApiKey:
    if not text.startswith(API_KEY_PREFIX) or len(text) == len(API_KEY_PREFIX):
        raise AccountError(f"'{text}' is not a Momor API key or the start of one")
    matches = list(ApiKey.objects.filter(prefix__startswith=text)[:2])
    if not matches:
        raise AccountError(f"no API key starts with '{text}'")
    if len(matches) > 1:
        raise AccountError(f"several API keys start with '{text}': give more of the key")
    return matches[0]


def api_key_revoke_by_text(text: str) -> ApiKey:
    """Revoke a key given whole, or by an unambiguous start of it such as its visible prefix.

    A prefix as the UI shows it (`sk-momor-AbCdEf…`) is taken too. Revoking a revoked key
    leaves it as it was."""
    text = text.strip().removesuffix("…").removesuffix("...")
    if len(text) > VISIBLE_PREFIX_LENGTH:
        key = _api_key_by_whole_key(text)
    else:
        key = _api_key_by_prefix(text)
    key.revoke()
    return key


# Saved provider keys -------------------------------------------------------------------


def _check_provider_place(place: str) -> None:
    """`place` is a provider root or root@region of the catalog."""
    # Imported here so that accounts loads without the gateway app's modules.
    from gateway.models import Provider, Region

    root, at, region = place.partition("@")
    if not _PLACE_NAME.match(root) or (at and not _PLACE_NAME.match(region)):
        raise AccountError(f"'{place}' is not a provider name or name@region")
    if not Provider.objects.filter(name=root).exists():
        raise AccountError(f"unknown provider '{root}'")
    if region and not Region.objects.filter(provider__name=root, name=region).exists():
        raise AccountError(f"unknown region '{place}'")


@sensitive_variables("secret")
def saved_key_save(
    *, organization: Organization, provider: str, secret: str, zdr: bool = False, label: str = ""
) -> SavedKey:
    """Save the organization's own key for a provider root or region, replacing any before."""
    _check_provider_place(provider)
    if not secret.strip():
        raise AccountError("the provider key is empty")
    if len(label) > 100:
        raise AccountError("the label is longer than 100 characters")
    key = SavedKey.objects.filter(organization=organization, provider=provider).first()
    key = key or SavedKey(organization=organization, provider=provider)
    key.set_secret(secret.strip())
    key.zdr = zdr
    key.label = label
    key.save()
    return key


def api_key_set_limits(
    *, key: ApiKey, credit_limit: Decimal | None, rate_limit: int | None
) -> ApiKey:
    """Set a key's own credit limit (USD in all) and rate limit (per minute); None lifts one."""
    _check_key_fields(key.name, credit_limit, rate_limit, None)
    key.credit_limit, key.rate_limit = credit_limit, rate_limit
    key.save(update_fields=["credit_limit", "rate_limit", "updated_at"])
    return key


# Members -------------------------------------------------------------------------------


def membership_invite(
    *, organization: Organization, email: str, role: str
) -> tuple[Membership, bool]:
    """Make the person with this email a member; a new person gets an account without a
    password (they set one through a reset link). Returns the membership and whether the
    account is new."""
    from django.contrib.auth import get_user_model

    email = email.strip().lower()
    if role not in Role.values:
        raise AccountError(f"'{role}' is not a role")
    users = get_user_model().objects
    with transaction.atomic():
        user = users.filter(email__iexact=email).order_by("pk").first()
        created = user is None
        if user is None:
            user = users.create_user(username=email, email=email)  # no usable password yet
        membership, joined = Membership.objects.get_or_create(
            user=user, organization=organization, defaults={"role": role}
        )
    if not joined:
        raise AccountError(f"{email} is already a member of {organization.slug}")
    return membership, created


def _check_owner_remains(membership: Membership, new_role: str | None) -> None:
    if membership.role != Role.OWNER or new_role == Role.OWNER:
        return
    owners = Membership.objects.filter(organization=membership.organization, role=Role.OWNER)
    if owners.count() <= 1:
        raise AccountError("an organization keeps at least one owner")


def membership_set_role(*, membership: Membership, role: str) -> Membership:
    """Change a member's role; the last owner stays an owner."""
    if role not in Role.values:
        raise AccountError(f"'{role}' is not a role")
    with transaction.atomic():
        _check_owner_remains(membership, role)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, membership: Membership) -> None:
    """Take a member out of the organization; the last owner stays."""
    with transaction.atomic():
        _check_owner_remains(membership, None)
        membership.delete()
