"""`revoke_api_key KEY_OR_PREFIX`: revoke a key given whole or by an unambiguous prefix."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import AccountError, api_key_revoke_by_text
from audit.actors import Actor
from audit.trail import audited


class Command(BaseCommand):
    help = "Revoke an API key, given whole or by an unambiguous start of it (its prefix)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="KEY_OR_PREFIX")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with audited(Actor.command("revoke_api_key"), "revoke") as change:
                change.obj = key = api_key_revoke_by_text(options["key"])
        except AccountError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{key.organization.slug}: revoked {key}")
