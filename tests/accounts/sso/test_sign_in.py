"""Starting a sign-in through an identity provider, over HTTP on the real server: a GET asks
first (on a page whose form-action admits the provider), and a provider that cannot be reached
is a 502 with the failure page, not a server error."""

from __future__ import annotations

import re
import socket
from typing import Any

import httpx


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def providers(issuer: str) -> dict[str, Any]:
    app = {"provider_id": "okta", "name": "Acme Okta", "client_id": "momor", "secret": "s"}
    return {"openid_connect": {"APPS": [{**app, "settings": {"server_url": issuer}}]}}


def test_a_get_asks_before_going_to_the_provider(gateway: str, settings: Any) -> None:
    settings.SOCIALACCOUNT_PROVIDERS = providers("https://acme.okta.example")

    page = httpx.get(f"{gateway}/accounts/oidc/okta/login/")

    assert page.status_code == 200
    assert "<h1>Sign in with Acme Okta</h1>" in page.text
    assert "form-action 'self' https://acme.okta.example" in page.headers["content-security-policy"]


def test_a_provider_that_cannot_be_reached_is_a_502_with_the_failure_page(
    gateway: str, settings: Any
) -> None:
    settings.SOCIALACCOUNT_PROVIDERS = providers(f"http://127.0.0.1:{closed_port()}")
    with httpx.Client(base_url=gateway) as browser:
        sign_in_page = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', sign_in_page.text)
        assert token is not None

        started = browser.post(
            "/accounts/oidc/okta/login/",
            data={"csrfmiddlewaretoken": token.group(1)},
            headers={"referer": f"{gateway}/accounts/login/"},
        )

    assert started.status_code == 502
    assert "<h1>Single sign-on failed</h1>" in started.text
