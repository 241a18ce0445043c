"""Records written before Momor scrubbed provider failures may hold the key a provider quoted
back (and `GET /v1/generation` would still show it to the organization, Momor's own key
included). `scrub_records` masks them once after upgrading."""

from __future__ import annotations

import pytest

from accounts.models import Organization, SavedKey
from billing.models import Attempt, Generation
from gateway.models import Provider
from tests.child_process import manage
from tests.ui_helpers import make_generation

pytestmark = pytest.mark.security

SAVED = "sk-acme-saved-openai-key-0123456789-QzXw"
STORED = "momor-stored-mistral-key-0123456789-PvKy"
FROM_ENV = "momor-env-deepinfra-key-0123456789-EnVk"
TOKEN = "ya29.c0AfH6SMBx0123456789abcdefToKn"


@pytest.mark.django_db(transaction=True)
def test_scrub_records_masks_keys_in_stored_errors(acme: Organization) -> None:
    saved = SavedKey(organization=acme, provider="openai")
    saved.set_secret(SAVED)
    saved.save()
    mistral = Provider(name="mistral", api="mistral", base_url="https://api.mistral.ai/v1")
    mistral.set_key(STORED)
    mistral.save()
    Provider.objects.create(
        name="deepinfra", api="deepinfra", base_url="https://api.deepinfra.com/v1/openai",
        key_env="MOMOR_PROVIDER_KEY_DEEPINFRA",
    )  # fmt: skip
    generation = make_generation(acme, status="failed")
    errors = [
        f"Incorrect API key provided: {SAVED}.",
        f"invalid key {STORED}",
        f"key {FROM_ENV} revoked",
        f"token Bearer {TOKEN} expired",
        "upstream overloaded",
    ]
    for position, error in enumerate(errors, 2):
        Attempt.objects.create(generation=generation, position=position, error=error)
    Generation.objects.filter(pk=generation.pk).update(error=errors[1])

    done = manage("scrub_records", MOMOR_PROVIDER_KEY_DEEPINFRA=FROM_ENV)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "attempts: 4 scrubbed; generations: 1 scrubbed\n"
    stored = list(
        Attempt.objects.filter(generation=generation, position__gte=2)
        .order_by("position")
        .values_list("error", flat=True)
    )
    assert stored == [
        "Incorrect API key provided: ****QzXw.",
        "invalid key ****PvKy",
        "key ****EnVk revoked",
        "token Bearer ****ToKn expired",
        "upstream overloaded",
    ]
    assert Generation.objects.get(pk=generation.pk).error == "invalid key ****PvKy"
