"""The sign-in page's Content-Security-Policy admits the identity providers' origins in its
form-action, over HTTP on the real server, and only there."""

from __future__ import annotations

from typing import Any

import httpx

from accounts.sso.form_action import with_form_action

PROVIDERS = {
    "openid_connect": {
        "APPS": [
            {
                "provider_id": provider_id,
                "name": provider_id,
                "client_id": "momor",
                "secret": "a-secret",
                "settings": {"server_url": issuer},
            }
            for provider_id, issuer in [
                ("okta", "https://acme.okta.com"),
                ("entra", "https://login.microsoftonline.com/tenant/v2.0"),
                ("keycloak", "https://acme.okta.com/realms/other"),
            ]
        ]
    }
}


def test_form_action_gains_the_origins_and_the_other_directives_stay() -> None:
    policy = "default-src 'self'; form-action 'self'; frame-ancestors 'none'"

    assert with_form_action(policy, ["https://a.example", "https://b.example:8443"]) == (
        "default-src 'self'; form-action 'self' https://a.example https://b.example:8443; "
        "frame-ancestors 'none'"
    )


def test_a_policy_without_form_action_is_left_as_it_is() -> None:
    assert with_form_action("default-src 'self'", ["https://a.example"]) == "default-src 'self'"


def test_the_sign_in_page_admits_each_issuers_origin_once(gateway: str, settings: Any) -> None:
    settings.SOCIALACCOUNT_PROVIDERS = PROVIDERS

    sign_in = httpx.get(f"{gateway}/accounts/login/")
    other = httpx.get(f"{gateway}/accounts/password_reset/")

    directives = sign_in.headers["content-security-policy"].split("; ")
    assert "form-action 'self' https://acme.okta.com https://login.microsoftonline.com" in (
        directives
    )
    assert "form-action 'self'" in other.headers["content-security-policy"].split("; ")
    assert 'action="/accounts/oidc/okta/login/"' in sign_in.text
    assert 'action="/accounts/oidc/entra/login/"' in sign_in.text
