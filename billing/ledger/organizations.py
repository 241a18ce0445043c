"""Organizations created with their first credits: the organization (accounts) and its opening
top-up on the ledger (billing), in one transaction."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from accounts.models import Organization
from accounts.services import AccountError, organization_check_slug, organization_create
from billing.ledger.posting import ledger_post
from billing.models import EntryKind


def organization_create_funded(
    *, slug: str, name: str = "", credits: Decimal | None = None, zdr_hold: bool = False
) -> Organization:
    """Create an organization; its first credits are posted to the ledger as a top-up. Refused
    with an AccountError, nothing written: a bad or taken slug, negative credits."""
    organization_check_slug(slug)
    if credits is not None and credits < 0:
        raise AccountError("credits must not be negative")
    with transaction.atomic():
        organization = organization_create(slug=slug, name=name, zdr_hold=zdr_hold)
        if credits:
            ledger_post(
                organization_id=organization.pk,
                kind=EntryKind.TOPUP,
                amount=credits,
                note="initial credits",
            )
    organization.refresh_from_db()
    return organization
