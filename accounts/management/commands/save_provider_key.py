"""`save_provider_key --org SLUG --provider NAME[@REGION] --key-env VAR [--zdr] [--label L]`:
save an organization's own provider key, read from an environment variable so that it never
appears in a command line or in the shell's history."""

from __future__ import annotations

import os
import re
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.views.decorators.debug import sensitive_variables

from accounts.key_env import is_momor_setting
from accounts.models import SavedKey
from accounts.services import AccountError, organization_by_slug, saved_key_save
from audit.actors import Actor
from audit.trail import audited

_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@sensitive_variables("secret")
def _secret_from(variable: str) -> str:
    if not _VARIABLE.match(variable):
        raise CommandError(f"--key-env {variable!r} is not an environment variable's name")
    if is_momor_setting(variable):
        raise CommandError(f"{variable} is one of Momor's own settings, never a provider's key")
    secret = os.environ.get(variable)
    if secret is None:
        raise CommandError(f"the environment variable {variable} is not set")
    if not secret.strip():
        raise CommandError(f"the environment variable {variable} is empty")
    return secret


class Command(BaseCommand):
    help = "Save (or replace) an organization's own key for a provider or one of its regions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, metavar="SLUG")
        parser.add_argument("--provider", required=True, metavar="NAME[@REGION]")
        parser.add_argument("--key-env", required=True, metavar="VAR", help="holds the key")
        parser.add_argument("--zdr", action="store_true", help="the key's terms cover ZDR")
        parser.add_argument("--label", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        secret = _secret_from(options["key_env"])
        try:
            organization = organization_by_slug(options["org"])
            replaced = SavedKey.objects.filter(
                organization=organization, provider=options["provider"]
            ).first()
            with audited(Actor.command("save_provider_key"), "save", replaced) as change:
                change.obj = key = saved_key_save(
                    organization=organization,
                    provider=options["provider"],
                    secret=secret,
                    zdr=options["zdr"],
                    label=options["label"],
                )
        except (AccountError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from None
        zdr = "on" if key.zdr else "off"
        self.stdout.write(f"{key.organization.slug}: saved key for {key.provider}, zdr {zdr}")
