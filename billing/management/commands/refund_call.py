"""`refund_call REQUEST_ID [--amount USD] [--note N] [--idempotency-key K]`: refund a charged
call on its organization's ledger, at most what it was charged; prints the refund and the
balance after it. A retry with the same key posts nothing and prints what the first printed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import AccountError, parse_usd
from audit.actors import Actor
from audit.trail import audited
from billing.ledger.credits import CreditsError
from billing.ledger.refunds import call_refund
from core.formatting import format_usd


class Command(BaseCommand):
    help = "Refund a charged call (all that is not refunded yet, or --amount USD)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("request_id", metavar="REQUEST_ID")
        parser.add_argument("--amount", metavar="USD", help="at most what is left of the charge")
        parser.add_argument("--note", default="", help="shown with the ledger entry")
        parser.add_argument("--idempotency-key", metavar="KEY", help="refunds once per key")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with audited(Actor.command("refund_call"), "refund") as change:
                entry, _ = call_refund(
                    request_id=options["request_id"],
                    amount=_amount(options["amount"]),
                    note=options["note"][:300],
                    idempotency_key=options["idempotency_key"],
                )
                change.obj, change.note = entry, f"call {options['request_id']}"
        except (AccountError, CreditsError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{entry.organization.slug}: refunded {format_usd(entry.amount)} of call "
            f"{options['request_id']}, balance {format_usd(entry.balance_after)}"
        )


def _amount(text: str | None) -> Decimal | None:
    return None if text is None else parse_usd(text)
