"""Account services: the multi-step writes on organizations, API keys and saved provider keys.

Each takes keyword arguments and refuses bad input with an AccountError whose message is one
line an operator can read. None of them ever puts a secret in a message."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from accounts.cloud_projects import project_id_problem
from accounts.field_bounds import (
    INTEGER_MAX,
    USD_CEILING,
    USD_PLACES,
    day_in_range,
    day_range_text,
    has_nul,
)
from accounts.hooks import provider_places
from accounts.models import (
    ADMIN_ROLES,
    ApiKey,
    Invitation,
    KeyKind,
    Membership,
    Organization,
    Role,
    SavedKey,
)
from accounts.secrets import (
    API_KEY_PREFIX,
    VISIBLE_PREFIX_LENGTH,
    hash_api_key,
    new_api_key,
    visible_prefix,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
_PLACE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class AccountError(Exception):
    """A refused account operation; the message is one line, fit to show an operator."""


class NotAllowed(AccountError):
    """The operation is valid, but not for this caller's role."""


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
        raise AccountError(f"{text!r} is not an amount of USD") from None
    if not amount.is_finite() or abs(amount) >= USD_CEILING:
        raise AccountError(f"{text!r} is not an amount of USD")
    if amount != round(amount, USD_PLACES):
        raise AccountError(f"{text!r} has more than {USD_PLACES} decimal places")
    return amount


# Organizations -------------------------------------------------------------------------


def organization_by_slug(slug: str) -> Organization:
    if has_nul(slug):
        raise AccountError(f"unknown organization {slug!r}")
    try:
        return Organization.objects.get(slug=slug)
    except Organization.DoesNotExist:
        raise AccountError(f"unknown organization {slug!r}") from None


def organization_check_slug(slug: str) -> None:
    if not _SLUG.match(slug):
        raise AccountError(f"{slug!r} is not a slug: use lowercase letters, digits, - and _")


def organization_create(*, slug: str, name: str = "", zdr_hold: bool = False) -> Organization:
    """Create an organization, with no credits (`billing.ledger.organizations` creates a funded
    one)."""
    organization_check_slug(slug)
    _check_text("organization's name", name, 200)
    try:
        with transaction.atomic():
            return Organization.objects.create(slug=slug, name=name or slug, zdr_hold=zdr_hold)
    except IntegrityError:
        raise AccountError(f"organization {slug!r} already exists") from None


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


def _check_text(label: str, text: str, longest: int) -> None:
    if len(text) > longest:
        raise AccountError(f"the {label} is longer than {longest} characters")
    if has_nul(text):
        raise AccountError(f"the {label} holds a NUL character")


def _check_key_fields(
    name: str, credit_limit: Decimal | None, rate_limit: int | None, expires_at: datetime | None
) -> None:
    _check_text("key's name", name, 100)
    if credit_limit is not None and credit_limit < 0:
        raise AccountError("the credit limit must not be negative")
    if credit_limit is not None and credit_limit >= USD_CEILING:
        raise AccountError("the credit limit must be under 1,000,000,000 USD")
    if credit_limit is not None and credit_limit != round(credit_limit, USD_PLACES):
        raise AccountError(f"the credit limit has more than {USD_PLACES} decimal places")
    if rate_limit is not None and rate_limit < 1:
        raise AccountError("the rate limit must be at least 1 request per minute")
    if rate_limit is not None and rate_limit > INTEGER_MAX:
        raise AccountError(f"the rate limit must be at most {INTEGER_MAX:,} requests per minute")
    if expires_at is not None and expires_at <= timezone.now():
        raise AccountError("the expiry must be in the future")
    if expires_at is not None and not day_in_range(expires_at):
        raise AccountError(f"the expiry must be {day_range_text()}")


def api_key_create(
    *,
    organization: Organization,
    name: str = "",
    kind: str = KeyKind.INFERENCE,
    created_by: User | None = None,
    credit_limit: Decimal | None = None,
    rate_limit: int | None = None,
    expires_at: datetime | None = None,
    tighten_only: bool = False,
    minted_by: ApiKey | None = None,
) -> tuple[str, ApiKey]:
    """Create a key: the plain key is returned this once, and only its hash is stored.

    What a member may create is no more than what they may later set: with `tighten_only` the
    limits must be at least as tight as a new key's defaults (a rate limit no higher than
    MOMOR_RATE_LIMIT_PER_MINUTE), else NotAllowed. A key `minted_by` a management key expires
    no later than that key (at the same moment when no expiry is given)."""
    if minted_by is not None and expires_at is None:
        expires_at = minted_by.expires_at
    _check_key_fields(name, credit_limit, rate_limit, expires_at)
    limits = {"credit_limit": credit_limit, "rate_limit": rate_limit, "expires_at": expires_at}
    if tighten_only:  # a limit left out is the default itself
        given = {field: value for field, value in limits.items() if value is not None}
        _check_tightens(ApiKey(organization=organization), given)
    if minted_by is not None:
        _check_within_life_of(minted_by, ApiKey(expires_at=minted_by.expires_at), limits)
    plain = new_api_key()
    key = ApiKey.objects.create(
        organization=organization,
        name=name,
        kind=kind,
        prefix=visible_prefix(plain),
        key_hash=hash_api_key(plain),
        created_by=created_by,
        **limits,
    )
    return plain, key


def api_key_update(
    *,
    key: ApiKey,
    tighten_only: bool,
    name: str | Unchanged = UNCHANGED,
    credit_limit: Decimal | Unchanged | None = UNCHANGED,
    rate_limit: int | Unchanged | None = UNCHANGED,
    expires_at: datetime | Unchanged | None = UNCHANGED,
    acting_key: ApiKey | None = None,
) -> ApiKey:
    """Change the fields given. None lifts a limit (the rate limit falls back to the
    deployment's default). With `tighten_only` (a member on their own key) a limit may only
    be tightened: a lower credit or rate limit, an earlier expiry; raising or lifting one is
    NotAllowed, since only admins set limits. A management key (`acting_key`) only tightens
    its own limits and life, and sets no expiry past its own."""
    changes: dict[str, Any] = {
        field: value
        for field, value in [
            ("name", name),
            ("credit_limit", credit_limit),
            ("rate_limit", rate_limit),
            ("expires_at", expires_at),
        ]
        if not isinstance(value, Unchanged) and value != getattr(key, field)
    }
    merged = {f: changes.get(f, getattr(key, f)) for f in ("name", "credit_limit", "rate_limit")}
    _check_key_fields(merged["name"], merged["credit_limit"], merged["rate_limit"], None)
    if changes.get("expires_at") is not None:
        _check_key_fields("", None, None, changes["expires_at"])
    if tighten_only or (acting_key is not None and acting_key.pk == key.pk):
        _check_tightens(key, changes)
    if acting_key is not None:
        _check_within_life_of(acting_key, key, changes)
    for field, value in changes.items():
        setattr(key, field, value)
    if changes:
        key.save(update_fields=[*changes, "updated_at"])
    return key


def _check_tightens(key: ApiKey, changes: dict[str, Any]) -> None:
    bounds = {
        "credit_limit": key.credit_limit,
        "rate_limit": key.rate_limit or settings.MOMOR_RATE_LIMIT_PER_MINUTE or None,
        "expires_at": key.expires_at,
    }
    for field, old in bounds.items():
        if field in changes and not _no_looser(old, changes[field]):
            label = field.replace("_", " ")
            raise NotAllowed(f"only admins raise or lift a key's {label}: you may only tighten it")


def _check_within_life_of(acting: ApiKey, key: ApiKey, changes: dict[str, Any]) -> None:
    """A management key that expires sets no expiry past its own on any key, and lifts none;
    tightening an expiry that already lies past its own is allowed."""
    if acting.expires_at is None or "expires_at" not in changes:
        return
    new = changes["expires_at"]
    if _no_looser(acting.expires_at, new) or _no_looser(key.expires_at, new):
        return
    raise NotAllowed(
        "a management key sets no expiry later than its own "
        f"({acting.expires_at.isoformat()}), and lifts none"
    )


def _no_looser(old: Any, new: Any) -> bool:
    """Whether `new` bounds at least as tightly as `old` (None: no bound)."""
    return new is not None and (old is None or new <= old)


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
        raise AccountError(f"{text!r} is not a Momor API key or the start of one")
    matches = list(ApiKey.objects.filter(prefix__startswith=text)[:2])
    if not matches:
        raise AccountError(f"no API key starts with {text!r}")
    if len(matches) > 1:
        raise AccountError(f"several API keys start with {text!r}: give more of the key")
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
    root, at, region = place.partition("@")
    if not _PLACE_NAME.match(root) or (at and not _PLACE_NAME.match(region)):
        raise AccountError(f"{place!r} is not a provider name or name@region")
    places = provider_places()
    if not places.has_provider(root):
        raise AccountError(f"unknown provider {root!r}")
    if region and not places.has_region(root, region):
        raise AccountError(f"unknown region {place!r}")


@sensitive_variables("secret")
def saved_key_save(
    *, organization: Organization, provider: str, secret: str, zdr: bool = False, label: str = ""
) -> SavedKey:
    """Save the organization's own key for a provider root or region, replacing any before."""
    _check_provider_place(provider)
    if not secret.strip():
        raise AccountError("the provider key is empty")
    if problem := project_id_problem(secret):
        raise AccountError(problem)
    _check_text("label", label, 100)
    key = SavedKey.objects.filter(organization=organization, provider=provider).first()
    key = key or SavedKey(organization=organization, provider=provider)
    key.set_secret(secret.strip())
    key.zdr = zdr
    key.label = label
    key.save()
    return key


# Members -------------------------------------------------------------------------------


def _check_owner_remains(membership: Membership, new_role: str | None) -> None:
    """Inside a transaction: the organization's row is locked, so two owners demoting each
    other at once cannot leave it with none."""
    Organization.objects.select_for_update().filter(pk=membership.organization_id).first()
    membership.refresh_from_db(fields=["role"])
    if membership.role != Role.OWNER or new_role == Role.OWNER:
        return
    owners = Membership.objects.filter(organization=membership.organization, role=Role.OWNER)
    if owners.count() <= 1:
        raise AccountError("an organization keeps at least one owner")


def membership_set_role(*, membership: Membership, role: str) -> Membership:
    """Change a member's role; the last owner stays an owner. Below admin, the management
    keys they made are revoked (the gateway would refuse them anyway)."""
    if role not in Role.values:
        raise AccountError(f"{role!r} is not a role")
    with transaction.atomic():
        _check_owner_remains(membership, role)
        membership.role = role
        membership.save(update_fields=["role"])
        if role not in ADMIN_ROLES:
            _revoke_keys_of(membership, kinds=[KeyKind.MANAGEMENT])
        _withdraw_invitations(membership, role)
    return membership


def membership_remove(*, membership: Membership) -> None:
    """Take a member out of the organization; the last owner stays. Every key they made in
    it is revoked: it does not come back if they are invited again."""
    with transaction.atomic():
        _check_owner_remains(membership, None)
        membership.delete()
        _revoke_keys_of(membership, kinds=KeyKind.values)
        _withdraw_invitations(membership, None)


def _revoke_keys_of(membership: Membership, *, kinds: list[str]) -> None:
    now = timezone.now()
    ApiKey.objects.filter(
        organization_id=membership.organization_id,
        created_by_id=membership.user_id,
        kind__in=kinds,
        revoked_at__isnull=True,
    ).update(revoked_at=now, updated_at=now)


def _withdraw_invitations(membership: Membership, role: str | None) -> None:
    """Revoke the pending invitations this person sent that they may no longer send, now that
    their role is `role` (None: they left)."""
    pending = Invitation.objects.pending().filter(
        organization_id=membership.organization_id, invited_by_id=membership.user_id
    )
    if role == Role.ADMIN:
        pending = pending.filter(role=Role.OWNER)
    if role != Role.OWNER:
        pending.update(revoked_at=timezone.now())
