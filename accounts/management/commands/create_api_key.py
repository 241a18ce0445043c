"""`create_api_key --org SLUG [--name N] [--kind inference|management] [--credit-limit USD]
[--rate-limit N] [--expires-in DURATION]`: prints the new key alone on stdout, the only time
it is shown."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.models import KeyKind
from accounts.services import AccountError, api_key_create, organization_by_slug, parse_usd
from audit.actors import Actor
from audit.trail import audited
from core.durations import parse_duration


def _rate_limit(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        message = f"--rate-limit must be a whole number of requests per minute, not {value!r}"
        raise CommandError(message) from None


def _expires_at(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return timezone.now() + parse_duration(value)
    except ValueError as exc:
        raise CommandError(f"--expires-in: {exc}") from None
    except OverflowError:
        raise CommandError(f"--expires-in: {value} ends after the year 9999") from None


def _credit_limit(value: str | None) -> Decimal | None:
    return parse_usd(value) if value is not None else None


def _kind(value: str) -> str:
    if value not in KeyKind.values:
        raise CommandError(f"--kind must be inference or management, not {value!r}")
    return value


class Command(BaseCommand):
    help = "Create an API key for an organization and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, metavar="SLUG")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--kind",
            default=KeyKind.INFERENCE.value,
            metavar="inference|management",
            help="an inference key calls the gateway, a management key the management API",
        )
        parser.add_argument("--credit-limit", metavar="USD", help="what the key may spend")
        parser.add_argument("--rate-limit", metavar="N", help="requests per minute")
        parser.add_argument("--expires-in", metavar="DURATION", help="P90D, 30.00:00:00...")

    def handle(self, *args: Any, **options: Any) -> None:
        kind = _kind(options["kind"])
        rate_limit = _rate_limit(options["rate_limit"])
        expires_at = _expires_at(options["expires_in"])
        try:
            with audited(Actor.command("create_api_key"), "create") as change:
                plain, change.obj = api_key_create(
                    organization=organization_by_slug(options["org"]),
                    name=options["name"],
                    kind=kind,
                    credit_limit=_credit_limit(options["credit_limit"]),
                    rate_limit=rate_limit,
                    expires_at=expires_at,
                )
        except AccountError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(plain)
