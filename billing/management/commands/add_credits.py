"""`add_credits --org SLUG AMOUNT [--idempotency-key KEY]`: top up an organization's credits
(USD) on the ledger; a retry with the same key posts nothing and prints what the first printed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.field_bounds import USD_CEILING
from accounts.models import Organization
from accounts.services import AccountError, organization_by_slug, parse_usd
from audit.actors import Actor
from audit.trail import audited
from billing.ledger.credits import CreditsError, credits_post, credits_replayed, operator_key
from billing.models import EntryKind, LedgerEntry
from core.formatting import format_usd


def _positive_usd(text: str) -> Decimal:
    amount = parse_usd(text)
    if amount <= 0:
        raise AccountError(f"the amount must be positive, not {text}")
    return amount


def _check_balance_holds(organization: Organization, amount: Decimal) -> None:
    """The balance column holds under a billion USD: a top-up past it is refused here, not
    by the database."""
    if organization.balance + amount >= USD_CEILING:
        raise AccountError(
            f"the balance would be {format_usd(organization.balance + amount)}: "
            "a balance stays under 1,000,000,000 USD"
        )


class Command(BaseCommand):
    help = "Add credits (USD) to an organization as a ledger top-up; prints the new balance."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, metavar="SLUG")
        parser.add_argument("amount", metavar="AMOUNT", help="USD, such as 25 or 12.50")
        parser.add_argument(
            "--idempotency-key",
            metavar="KEY",
            help="posts once: a retry with this key prints the first result; another amount "
            "under it is refused",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            organization = organization_by_slug(options["org"])
            amount = _positive_usd(options["amount"])
            with audited(Actor.command("add_credits"), "add_credits", organization) as change:
                entry = _top_up(organization, amount, options["idempotency_key"])
                change.note = f"ledger entry {entry.pk}"
        except (AccountError, CreditsError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{organization.slug}: balance {format_usd(entry.balance_after)}")


def _top_up(organization: Organization, amount: Decimal, key: str | None) -> LedgerEntry:
    stored = operator_key(organization.pk, key) if key else None
    first = credits_replayed(stored, kind=EntryKind.TOPUP, amount=amount)
    if first is not None:
        return first
    _check_balance_holds(organization, amount)
    entry, _ = credits_post(
        organization_id=organization.pk,
        kind=EntryKind.TOPUP,
        amount=amount,
        note="add_credits",
        idempotency_key=key,
    )
    return entry
