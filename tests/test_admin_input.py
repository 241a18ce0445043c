"""What an operator enters in the admin is held to the same rules as the catalog file: a form
that breaks one is shown again with the field's error, and nothing is stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ApiKey, Organization
from billing.models import LedgerEntry
from gateway.models import Model, Offering, Provider, Region
from tests.conftest import make_key


@dataclass
class Catalog:
    provider: Provider
    region: Region
    model: Model
    offering: Offering


@pytest.fixture
def catalog(db: None) -> Catalog:
    provider = Provider.objects.create(name="azure", api="azure", base_url="https://az.example/v1")
    region = Region.objects.create(provider=provider, name="eu", base_url="https://eu.example/v1")
    model = Model.objects.create(id="openai/gpt-5", released=date(2025, 8, 7), tiers=["high"])
    offering = Offering.objects.create(
        model=model, provider=provider, upstream_id="gpt-5", prompt_price=Decimal("1.25")
    )
    return Catalog(provider, region, model, offering)


def _url(obj: Any, view: str) -> str:
    opts = obj._meta
    args = [] if view in ("changelist", "add") else [obj.pk]
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def _errors(client: Client, url: str, data: dict[str, Any]) -> dict[str, list[str]]:
    """The form's errors, which must keep the page from saving (a save redirects)."""
    response = client.post(url, data)
    assert response.status_code == 200, response.get("Location")
    errors: dict[str, list[str]] = response.context["adminform"].form.errors
    return {name: list(messages) for name, messages in errors.items()}


# Offerings


def _offering(catalog: Catalog, **changes: str) -> dict[str, Any]:
    data = {
        "model": catalog.model.pk,
        "provider": catalog.provider.pk,
        "region": "",
        "upstream_id": "gpt-5",
        "prompt_price": "1.25",
        "completion_price": "10",
        "cache_read_price": "0",
        "cache_write_price": "0",
        "reasoning_efforts": '["low", "high"]',
        "input_modalities": "",
        "parameters": "[]",
        "quantization": "",
        "enabled": "on",
    }
    return {**data, **changes}


@pytest.mark.parametrize(
    "field", ["prompt_price", "completion_price", "cache_read_price", "cache_write_price"]
)
def test_it_refuses_a_negative_offering_price(
    admin_client: Client, catalog: Catalog, field: str
) -> None:
    url = _url(catalog.offering, "change")
    assert _errors(admin_client, url, _offering(catalog, **{field: "-0.8"})) == {
        field: [f"'{field}' must not be negative"]
    }
    catalog.offering.refresh_from_db()
    assert getattr(catalog.offering, field) >= 0


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        (
            {"reasoning_efforts": '["ultra"]'},
            {
                "reasoning_efforts": [
                    "unknown reasoning effort 'ultra' (valid: none, minimal, low, medium, high, "
                    "xhigh)"
                ]
            },
        ),
        (
            {"reasoning_efforts": '"high"'},
            {"reasoning_efforts": ["'reasoning_efforts' must be a list of strings"]},
        ),
        (
            {"input_modalities": '["smell"]'},
            {"input_modalities": ["unknown input modality 'smell' (valid: image, audio, file)"]},
        ),
        (
            {"parameters": '"temperature"'},
            {"parameters": ["'parameters' must be a list of strings"]},
        ),
        (
            {"parameters": '["top p"]'},
            {"parameters": ["parameter 'top p' must be letters, digits, '.', '_', ':' or '-'"]},
        ),
        (
            {"quantization": "fp 8"},
            {"quantization": ["quantization 'fp 8' must be letters, digits, '.', '_', ':' or '-'"]},
        ),
    ],
    ids=["effort", "efforts-not-a-list", "modality", "parameters", "parameter", "quantization"],
)
def test_it_refuses_an_offering_capability_outside_its_vocabulary(
    admin_client: Client, catalog: Catalog, changes: dict[str, str], errors: dict[str, Any]
) -> None:
    url = _url(catalog.offering, "change")
    assert _errors(admin_client, url, _offering(catalog, **changes)) == errors


def test_it_stores_an_offering_as_the_catalog_file_would(
    admin_client: Client, catalog: Catalog
) -> None:
    changes = {
        "reasoning_efforts": '["high", "minimal"]',
        "input_modalities": "[]",
        "parameters": "",
        "quantization": "FP8",
    }
    response = admin_client.post(_url(catalog.offering, "change"), _offering(catalog, **changes))
    assert response.status_code == 302
    offering = Offering.objects.get()
    assert offering.reasoning_efforts == ["minimal", "high"]
    assert (offering.input_modalities, offering.parameters) == ([], [])
    assert offering.quantization == "fp8"


# Models


def _model(**changes: str) -> dict[str, Any]:
    data = {
        "id": "openai/gpt-5",
        "name": "",
        "kind": "chat",
        "released": "2025-08-07",
        "tiers": '["high"]',
        "context_length": "400000",
        "max_output_tokens": "128000",
    }
    return {**data, **changes}


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        ({"tiers": '"high"'}, {"tiers": ["'tiers' must be a list of strings"]}),
        (
            {"tiers": '["High"]'},
            {"tiers": ["tier 'High' must be lowercase letters, digits, - or _"]},
        ),
        ({"tiers": '["high", 3]'}, {"tiers": ["'tiers' must be a list of strings"]}),
        (
            {"context_length": "0"},
            {"context_length": ["'context_length' must be a positive whole number"]},
        ),
        (
            {"max_output_tokens": "0"},
            {"max_output_tokens": ["'max_output_tokens' must be a positive whole number"]},
        ),
    ],
    ids=["tiers-string", "tier-case", "tier-number", "context", "max-output"],
)
def test_it_refuses_a_model_field_of_the_wrong_shape(
    admin_client: Client, catalog: Catalog, changes: dict[str, str], errors: dict[str, Any]
) -> None:
    url = _url(catalog.model, "change")
    assert _errors(admin_client, url, _model(**changes)) == errors
    catalog.model.refresh_from_db()
    assert catalog.model.tiers == ["high"]


@pytest.mark.parametrize("model_id", ["OpenAI/GPT-5", "gpt-5", "openai/gpt 5", "openai/"])
def test_it_refuses_to_add_a_model_whose_id_is_not_lowercase_publisher_slash_name(
    admin_client: Client, catalog: Catalog, model_id: str
) -> None:
    assert _errors(admin_client, _url(catalog.model, "add"), _model(id=model_id)) == {
        "id": ["id must be publisher/name in lowercase letters, digits, '.', '-' or '_'"]
    }
    assert list(Model.objects.values_list("id", flat=True)) == ["openai/gpt-5"]


def test_editing_a_model_never_creates_a_second_one(admin_client: Client, catalog: Catalog) -> None:
    data = _model(id="openai/gpt-5-renamed", tiers='["low"]')
    response = admin_client.post(_url(catalog.model, "change"), data)
    assert response.status_code == 302
    assert list(Model.objects.values_list("id", "tiers")) == [("openai/gpt-5", ["low"])]
    assert Offering.objects.get().model_id == "openai/gpt-5"


def test_it_saves_a_model_with_its_list_fields_left_empty(
    admin_client: Client, catalog: Catalog
) -> None:
    response = admin_client.post(_url(catalog.model, "add"), _model(id="acme/tiny", tiers=""))
    assert response.status_code == 302
    assert Model.objects.get(id="acme/tiny").tiers == []


# Providers and regions


def _provider(catalog: Catalog, **changes: str) -> dict[str, Any]:
    data = {
        "name": "azure",
        "display_name": "",
        "api": "azure",
        "base_url": "https://az.example/v1",
        "key_env": "",
        "locations": '["EU"]',
        "collects_data": "on",
        "new_key": "",
        "regions-TOTAL_FORMS": "1",
        "regions-INITIAL_FORMS": "1",
        "regions-MIN_NUM_FORMS": "0",
        "regions-MAX_NUM_FORMS": "1000",
        "regions-0-id": str(catalog.region.pk),
        "regions-0-provider": str(catalog.provider.pk),
        "regions-0-name": "eu",
        "regions-0-base_url": "https://eu.example/v1",
        "regions-0-collects_data": "unknown",
        "regions-0-locations": "[]",
    }
    return {**data, **changes}


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        ({"name": "Azure"}, {"name": ["name 'Azure' must be lowercase letters, digits, - or _"]}),
        (
            {"base_url": "ftp://az.example/v1"},
            {"base_url": ["'base_url' must be an http or https URL, not 'ftp://az.example/v1'"]},
        ),
        (
            {"locations": '["E U"]'},
            {"locations": ["location 'E U' must be letters, digits, '.', '_', ':' or '-'"]},
        ),
        ({"locations": '"EU"'}, {"locations": ["'locations' must be a list of strings"]}),
    ],
    ids=["name", "url", "location", "locations-string"],
)
def test_it_refuses_a_provider_field_of_the_wrong_shape(
    admin_client: Client, catalog: Catalog, changes: dict[str, str], errors: dict[str, Any]
) -> None:
    url = _url(catalog.provider, "change")
    assert _errors(admin_client, url, _provider(catalog, **changes)) == errors
    assert Provider.objects.get().name == "azure"


def test_it_refuses_a_region_name_routing_cannot_write(
    admin_client: Client, catalog: Catalog
) -> None:
    data = _provider(catalog, **{"regions-0-name": "EU"})
    response = admin_client.post(_url(catalog.provider, "change"), data)
    assert response.status_code == 200
    assert response.context["inline_admin_formsets"][0].formset.errors == [
        {"name": ["name 'EU' must be lowercase letters, digits, - or _"]}
    ]
    assert Region.objects.get().name == "eu"


# Organizations, their keys and their credits


def _organization(**changes: str) -> dict[str, Any]:
    data = {
        "slug": "acme",
        "name": "Acme",
        "max_model_age": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    return {**data, **changes}


@pytest.mark.parametrize("age", ["0", "00:00:00", "-1 00:00:00", "-180 00:00:00"])
def test_it_refuses_an_organization_max_age_that_is_not_positive(
    admin_client: Client, acme: Organization, age: str
) -> None:
    url = _url(acme, "change")
    assert _errors(admin_client, url, _organization(max_model_age=age)) == {
        "max_model_age": ["The maximum model age must be longer than zero."]
    }
    acme.refresh_from_db()
    assert acme.max_model_age is None


def test_it_sets_a_positive_max_age(admin_client: Client, acme: Organization) -> None:
    response = admin_client.post(_url(acme, "change"), _organization(max_model_age="180 00:00:00"))
    assert response.status_code == 302
    acme.refresh_from_db()
    assert acme.max_model_age == timedelta(days=180)


def _key(**changes: str) -> dict[str, Any]:
    return {"name": "ci", "expires_at_0": "", "expires_at_1": "", **changes}


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        ({"credit_limit": "-1"}, {"credit_limit": ["The credit limit must not be negative."]}),
        ({"rate_limit": "0"}, {"rate_limit": ["The rate limit must be at least 1 a minute."]}),
        (
            {"credit_limit": "1000000000"},
            {
                "credit_limit": [
                    "Ensure that there are no more than 9 digits before the decimal point."
                ]
            },
        ),
        (
            {"rate_limit": "2147483648"},
            {"rate_limit": ["Ensure this value is less than or equal to 2147483647."]},
        ),
    ],
    ids=["negative-credit", "zero-rate", "credit-digits", "rate-column"],
)
def test_it_refuses_a_key_limit_outside_its_range(
    admin_client: Client, acme: Organization, changes: dict[str, str], errors: dict[str, Any]
) -> None:
    _, key = make_key(acme, name="ci")
    assert _errors(admin_client, _url(key, "change"), _key(**changes)) == errors
    key.refresh_from_db()
    assert (key.credit_limit, key.rate_limit) == (None, None)


def test_it_sets_key_limits_within_their_ranges(admin_client: Client, acme: Organization) -> None:
    _, key = make_key(acme, name="ci")
    data = _key(credit_limit="0", rate_limit="1")
    assert admin_client.post(_url(key, "change"), data).status_code == 302
    key.refresh_from_db()
    assert (key.credit_limit, key.rate_limit) == (Decimal(0), 1)
    assert ApiKey.objects.count() == 1


def test_it_refuses_an_adjustment_the_balance_cannot_hold(
    admin_client: Client, acme: Organization
) -> None:
    """acme holds $100: $999,999,999 more is beyond the balance's 18 digits, 9 of them places."""
    data = {"organization": str(acme.pk), "amount": "999999999", "note": ""}
    assert _errors(admin_client, reverse("admin:billing_ledgerentry_add"), data) == {
        "amount": ["The balance would be 1000000099 USD: it must stay under 1000000000 USD."]
    }
    assert LedgerEntry.objects.count() == 1
    acme.refresh_from_db()
    assert acme.balance == Decimal(100)
