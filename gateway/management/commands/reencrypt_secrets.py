"""`reencrypt_secrets`: rewrite every stored provider key (organizations' saved keys and
Momor's own) and every webhook's signing secret the way MOMOR_ENCRYPTION_KEY encrypts now:
secrets written before scrypt stretched a passphrase are read with the old derivation and
written with the new one."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.models import SavedKey
from accounts.secrets import is_current
from alerts.models import WebhookEndpoint
from audit.actors import Actor
from audit.trail import record_run
from gateway.models import Provider


def _saved_keys() -> tuple[int, int]:
    rewritten = kept = 0
    for row in SavedKey.objects.select_for_update():
        if is_current(row.secret_encrypted):
            kept += 1
            continue
        row.set_secret(row.secret)
        row.save(update_fields=["secret_encrypted", "suffix", "updated_at"])
        rewritten += 1
    return rewritten, kept


def _provider_keys() -> tuple[int, int]:
    rewritten = kept = 0
    for row in Provider.objects.exclude(key_encrypted="").select_for_update():
        if is_current(row.key_encrypted):
            kept += 1
            continue
        row.set_key(row.stored_key())
        row.save(update_fields=["key_encrypted", "updated_at"])
        rewritten += 1
    return rewritten, kept


def _webhook_secrets() -> tuple[int, int]:
    rewritten = kept = 0
    for row in WebhookEndpoint.objects.select_for_update():
        if is_current(row.secret_encrypted):
            kept += 1
            continue
        row.set_secret(row.secret())
        row.save(update_fields=["secret_encrypted"])
        rewritten += 1
    return rewritten, kept


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored provider key and webhook secret the way MOMOR_ENCRYPTION_KEY "
        "encrypts now."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with transaction.atomic():
                saved, providers, hooks = _saved_keys(), _provider_keys(), _webhook_secrets()
                note = (
                    f"saved keys: {saved[0]} re-encrypted; "
                    f"Momor's provider keys: {providers[0]} re-encrypted; "
                    f"webhook secrets: {hooks[0]} re-encrypted"
                )
                record_run(Actor.command("reencrypt_secrets"), "reencrypt", "secrets", note=note)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"saved keys: {saved[0]} re-encrypted, {saved[1]} already current")
        self.stdout.write(
            f"Momor's provider keys: {providers[0]} re-encrypted, {providers[1]} already current"
        )
        self.stdout.write(f"webhook secrets: {hooks[0]} re-encrypted, {hooks[1]} already current")
