"""The identity providers read from the environment: each id's variables as allauth's
openid_connect apps, and a provider set up wrong stopping Momor with one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.redaction import scrub
from momor.identity_providers import from_environment


@pytest.fixture
def acme_entra(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MOMOR_SSO_PROVIDERS", "okta, acme-entra")
    for prefix in ["MOMOR_SSO_OKTA_", "MOMOR_SSO_ACME_ENTRA_"]:
        monkeypatch.setenv(prefix + "ISSUER", f"https://{prefix.lower()}.example.com")
        monkeypatch.setenv(prefix + "CLIENT_ID", prefix + "client")
        monkeypatch.setenv(prefix + "SECRET", prefix + "secret")
    return monkeypatch


def test_each_provider_is_an_openid_connect_app_named_by_its_id(
    acme_entra: pytest.MonkeyPatch,
) -> None:
    acme_entra.setenv("MOMOR_SSO_OKTA_NAME", "Acme Okta")

    assert from_environment() == [
        {
            "provider_id": "okta",
            "name": "Acme Okta",
            "client_id": "MOMOR_SSO_OKTA_client",
            "secret": "MOMOR_SSO_OKTA_secret",
            "settings": {
                "server_url": "https://momor_sso_okta_.example.com",
                "oauth_pkce_enabled": True,
            },
        },
        {
            "provider_id": "acme-entra",
            "name": "acme-entra",
            "client_id": "MOMOR_SSO_ACME_ENTRA_client",
            "secret": "MOMOR_SSO_ACME_ENTRA_secret",
            "settings": {
                "server_url": "https://momor_sso_acme_entra_.example.com",
                "oauth_pkce_enabled": True,
            },
        },
    ]


def test_a_secret_is_read_from_its_file(acme_entra: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "okta-secret"
    secret.write_text("from-a-file\n")
    acme_entra.delenv("MOMOR_SSO_OKTA_SECRET")
    acme_entra.setenv("MOMOR_SSO_OKTA_SECRET_FILE", str(secret))

    assert from_environment()[0]["secret"] == "from-a-file"


def test_each_client_secret_is_masked_in_what_is_logged(acme_entra: pytest.MonkeyPatch) -> None:
    acme_entra.setenv("MOMOR_SSO_OKTA_SECRET", "okta-client-secret-of-this-deployment")
    from_environment()

    line = scrub("token exchange: okta-client-secret-of-this-deployment refused")

    assert "okta-client-secret" not in line
    assert line == "token exchange: ****ment refused"


def test_no_provider_is_configured_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOMOR_SSO_PROVIDERS", raising=False)

    assert from_environment() == []


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("MOMOR_SSO_ACME_ENTRA_ISSUER", "MOMOR_SSO_ACME_ENTRA_ISSUER is required for acme-entra"),
        ("MOMOR_SSO_OKTA_CLIENT_ID", "MOMOR_SSO_OKTA_CLIENT_ID is required for okta"),
        ("MOMOR_SSO_OKTA_SECRET", "MOMOR_SSO_OKTA_SECRET is required for okta"),
    ],
)
def test_a_provider_missing_a_required_field_stops_momor(
    acme_entra: pytest.MonkeyPatch, variable: str, message: str
) -> None:
    acme_entra.delenv(variable)

    with pytest.raises(ImproperlyConfigured, match=f"^{message}$"):
        from_environment()


@pytest.mark.parametrize("provider_id", ["Okta", "acme_entra", "-okta", "ok/ta"])
def test_an_id_other_than_lowercase_letters_digits_and_dashes_stops_momor(
    monkeypatch: pytest.MonkeyPatch, provider_id: str
) -> None:
    monkeypatch.setenv("MOMOR_SSO_PROVIDERS", provider_id)

    with pytest.raises(ImproperlyConfigured, match="is not an id of lowercase letters"):
        from_environment()
