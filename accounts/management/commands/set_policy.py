"""`set_policy --org SLUG [--zdr on|off] [--deprecated on|off] [--max-age DURATION]`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Organization
from accounts.services import (
    UNCHANGED,
    AccountError,
    Unchanged,
    organization_by_slug,
    organization_set_policy,
)
from audit.actors import Actor
from audit.trail import audited
from core.durations import format_duration, parse_duration

_SWITCH = {"on": True, "off": False}


def _switch(flag: str, value: str | None) -> bool | None:
    if value is None:
        return None
    if value.lower() not in _SWITCH:
        raise CommandError(f"{flag} must be on or off, not {value!r}")
    return _SWITCH[value.lower()]


def _max_age(value: str | None) -> timedelta | Unchanged | None:
    if value is None:
        return UNCHANGED
    if value.strip().lower() == "none":
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise CommandError(f"--max-age: {exc}") from None


def describe_policy(organization: Organization) -> str:
    age = organization.max_model_age
    return (
        f"{organization.slug}: zdr hold {'on' if organization.zdr_hold else 'off'}, "
        f"deprecated models {'on' if organization.allow_deprecated else 'off'}, "
        f"max model age {format_duration(age) if age is not None else 'none'}"
    )


class Command(BaseCommand):
    help = "Set an organization's policy defaults, then print the policy."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, metavar="SLUG")
        parser.add_argument("--zdr", metavar="on|off", help="hold every call to ZDR")
        parser.add_argument(
            "--deprecated", metavar="on|off", help="let deprecated models serve tier/auto/*"
        )
        parser.add_argument(
            "--max-age", metavar="DURATION", help="P6M, 180.00:00:00, or none to lift it"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        zdr_hold = _switch("--zdr", options["zdr"])
        allow_deprecated = _switch("--deprecated", options["deprecated"])
        max_model_age = _max_age(options["max_age"])
        try:
            organization = organization_by_slug(options["org"])
            with audited(Actor.command("set_policy"), "update", organization):
                organization_set_policy(
                    organization=organization,
                    zdr_hold=zdr_hold,
                    allow_deprecated=allow_deprecated,
                    max_model_age=max_model_age,
                )
        except AccountError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(describe_policy(organization))
