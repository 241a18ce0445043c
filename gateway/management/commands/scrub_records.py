"""`scrub_records`: mask keys in the errors of stored records. Records written before Momor
scrubbed provider failures may hold the key a provider quoted back; run once after upgrading.
Every key Momor holds (organizations' saved keys, its own stored keys and the variables key_env
names) is masked, and anything shaped like a key."""

from __future__ import annotations

import os
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.key_env import key_env_problem
from accounts.models import SavedKey
from audit.actors import Actor
from audit.trail import record_run
from billing.models import Attempt, Generation
from core.redaction import scrub
from gateway.models import Provider

BATCH = 1000


def known_keys() -> list[str]:
    keys = [row.secret for row in SavedKey.objects.all()]
    for provider in Provider.objects.all():
        keys.append(provider.stored_key())
        if provider.key_env and key_env_problem(provider.key_env) is None:
            keys.append(os.environ.get(provider.key_env, ""))
    return [key for key in keys if key]


Record = TypeVar("Record", Attempt, Generation)


def scrub_errors(model: type[Record], keys: list[str]) -> int:
    """Mask the keys in every stored error of `model`; the number of rows changed."""
    changed: list[Record] = []
    for row in model.objects.exclude(error="").only("pk", "error").iterator(chunk_size=BATCH):
        clean = scrub(row.error, keys)
        if clean != row.error:
            row.error = clean
            changed.append(row)
    model.objects.bulk_update(changed, ["error"], batch_size=BATCH)
    return len(changed)


class Command(BaseCommand):
    help = "Mask provider keys in the errors of stored records (run once after upgrading)."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            keys = known_keys()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        with transaction.atomic():
            attempts, generations = scrub_errors(Attempt, keys), scrub_errors(Generation, keys)
            note = f"attempts: {attempts} scrubbed; generations: {generations} scrubbed"
            record_run(Actor.command("scrub_records"), "scrub", "billing.generation", note=note)
        self.stdout.write(f"attempts: {attempts} scrubbed; generations: {generations} scrubbed")
