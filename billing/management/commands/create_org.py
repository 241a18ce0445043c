"""`create_org SLUG [--name N] [--credits AMOUNT] [--zdr]`: create an organization."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import AccountError, parse_usd
from audit.actors import Actor
from audit.trail import audited
from billing.ledger.organizations import organization_create_funded
from core.formatting import format_usd


class Command(BaseCommand):
    help = "Create an organization, optionally with credits and a zero-data-retention hold."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="lowercase letters, digits, - and _")
        parser.add_argument("--name", default="", help="display name (default: the slug)")
        parser.add_argument("--credits", metavar="AMOUNT", help="USD to start with")
        parser.add_argument("--zdr", action="store_true", help="hold every call to ZDR")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            credits = parse_usd(options["credits"]) if options["credits"] is not None else None
            with audited(Actor.command("create_org"), "create") as change:
                change.obj = organization = organization_create_funded(
                    slug=options["slug"],
                    name=options["name"],
                    credits=credits,
                    zdr_hold=options["zdr"],
                )
        except AccountError as exc:
            raise CommandError(str(exc)) from None
        hold = "on" if organization.zdr_hold else "off"
        self.stdout.write(
            f"{organization.slug}: created, balance {format_usd(organization.balance)}, "
            f"zdr hold {hold}"
        )
