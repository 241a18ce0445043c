"""Who is calling: API keys and their organizations' policies and saved provider keys, held in
process. A key is looked up in the database the first time it is seen; after that the
background refresh keeps it current, so a call makes no query and a revoke lands within
seconds."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Q

from accounts.models import ApiKey, Budget, KeyKind, Organization, SavedKey, creator_holds
from accounts.secrets import UnreadableSecret
from billing.ledger.budget_spend import scope_id

log = logging.getLogger(__name__)

NEGATIVE_TTL = 2.0
NEGATIVE_MAX = 10_000


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A key as the gateway holds it; `revoked` also when its creator no longer stands behind
    it (removed from the organization, or no longer an admin for a management key)."""

    id: int
    organization_id: int
    expires_at: datetime | None
    revoked: bool
    credit_limit: Decimal | None
    rate_limit: int | None
    calls_gateway: bool = True
    created_by_id: int | None = None

    def usable(self, now: datetime) -> bool:
        return not self.revoked and (self.expires_at is None or self.expires_at > now)


@dataclass(frozen=True, slots=True)
class SavedKeyInfo:
    place: str
    secret: str
    zdr: bool


@dataclass(frozen=True, slots=True)
class BudgetInfo:
    """A budget as calls see it: `scope_id` is its key's id, its member's user id, or its
    organization's id."""

    scope: str
    scope_id: int
    period: str
    amount: Decimal


@dataclass(frozen=True, slots=True)
class OrgInfo:
    id: int
    slug: str
    zdr_hold: bool
    allow_deprecated: bool
    max_age: timedelta | None
    saved_keys: dict[str, SavedKeyInfo]
    budgets: tuple[BudgetInfo, ...] = ()


class Identities:
    """Known keys by hash and their organizations by id; replaced whole on refresh."""

    def __init__(self) -> None:
        self.keys: dict[str, KeyInfo] = {}
        self.orgs: dict[int, OrgInfo] = {}
        self._unknown: dict[str, float] = {}

    def known_missing(self, key_hash: str) -> bool:
        seen = self._unknown.get(key_hash)
        return seen is not None and time.monotonic() - seen < NEGATIVE_TTL

    def load_key(self, key_hash: str) -> KeyInfo | None:
        """Fetch one key and its organization (runs on a database thread)."""
        row = ApiKey.objects.with_creator_role().filter(key_hash=key_hash).first()
        if row is None:
            if len(self._unknown) > NEGATIVE_MAX:
                self._unknown = {}
            self._unknown[key_hash] = time.monotonic()
            return None
        info = _key_info(row)
        if info.organization_id not in self.orgs:
            self.orgs = {**self.orgs, **_load_orgs([info.organization_id])}
        self.keys = {**self.keys, key_hash: info}
        return info

    def refresh(self) -> None:
        """Reload every known key and organization (runs on the refresh thread)."""
        if self.keys:
            rows = ApiKey.objects.with_creator_role().filter(key_hash__in=list(self.keys))
            self.keys = {row.key_hash: _key_info(row) for row in rows}
        org_ids = {k.organization_id for k in self.keys.values()} | set(self.orgs)
        if org_ids:
            self.orgs = _load_orgs(list(org_ids))

    def org_for(self, org_id: int) -> OrgInfo | None:
        return self.orgs.get(org_id)

    def load_org(self, org_id: int) -> OrgInfo | None:
        """Fetch one organization, for calls made with a member's session."""
        loaded = _load_orgs([org_id])
        self.orgs = {**self.orgs, **loaded}
        return loaded.get(org_id)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: an organization, by one of its keys or by a signed-in member."""

    org: OrgInfo
    key: KeyInfo | None
    user_id: int | None


def org_info(org_id: int) -> OrgInfo | None:
    """One organization as calls see it, read now (for pages, not the hot path)."""
    return _load_orgs([org_id]).get(org_id)


def _key_info(row: ApiKey) -> KeyInfo:
    return KeyInfo(
        id=row.pk,
        organization_id=row.organization_id,
        expires_at=row.expires_at,
        revoked=_refused(row),
        credit_limit=row.credit_limit,
        rate_limit=row.rate_limit,
        calls_gateway=row.kind == KeyKind.INFERENCE,
        created_by_id=row.created_by_id,
    )


def _refused(row: ApiKey) -> bool:
    """Revoked, or its creator no longer stands behind it (`creator_role` is annotated)."""
    role: str | None = row.creator_role  # type: ignore[attr-defined]  # with_creator_role() annotates it
    return row.revoked_at is not None or not creator_holds(row.kind, row.created_by_id, role)


def _load_orgs(org_ids: list[int]) -> dict[int, OrgInfo]:
    saved: dict[int, dict[str, SavedKeyInfo]] = {}
    for key in SavedKey.objects.filter(Q(organization_id__in=org_ids)):
        info = _saved_key_info(key)
        if info is not None:
            saved.setdefault(key.organization_id, {})[key.provider] = info
    budgets: dict[int, list[BudgetInfo]] = {}
    for budget in Budget.objects.filter(organization_id__in=org_ids):
        budgets.setdefault(budget.organization_id, []).append(_budget_info(budget))
    return {
        org.pk: OrgInfo(
            id=org.pk,
            slug=org.slug,
            zdr_hold=org.zdr_hold,
            allow_deprecated=org.allow_deprecated,
            max_age=org.max_model_age,
            saved_keys=saved.get(org.pk, {}),
            budgets=tuple(budgets.get(org.pk, ())),
        )
        for org in Organization.objects.filter(pk__in=org_ids)
    }


def _budget_info(budget: Budget) -> BudgetInfo:
    return BudgetInfo(budget.scope, scope_id(budget), budget.period, budget.amount)


# Saved keys already reported unreadable, by (id, last change): each is logged once, not on
# every refresh.
_unreadable: set[tuple[int, datetime]] = set()


def _saved_key_info(key: SavedKey) -> SavedKeyInfo | None:
    """The key as calls use it; None for one that cannot be decrypted, which is skipped (its
    offerings fall to Momor's key) rather than failing its organization or the refresh."""
    try:
        return SavedKeyInfo(key.provider, key.secret, key.zdr)
    except UnreadableSecret:
        if (key.pk, key.updated_at) not in _unreadable:
            _unreadable.add((key.pk, key.updated_at))
            log.error(
                "saved key %s (organization %s, %s) cannot be decrypted with the current "
                "MOMOR_ENCRYPTION_KEY: skipped, its offerings use Momor's key until it is "
                "saved again",
                key.pk, key.organization_id, key.provider,
            )  # fmt: skip
        return None


def now() -> datetime:
    """What `timezone.now()` gives with USE_TZ (always on), without reading the settings."""
    return datetime.now(UTC)
