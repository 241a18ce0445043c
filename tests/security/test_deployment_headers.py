"""Attacker-style: what a browser is told to refuse. Every page of the members' UI and the
admin carries a Content-Security-Policy (scripts from Momor's own origin alone, no framing),
`nosniff`, a referrer policy and frame denial; behind a TLS proxy named by
MOMOR_PROXY_SSL_HEADER, a request the proxy received over HTTPS is secure, and the answer
carries Strict-Transport-Security (HSTS is on when the cookies are secure)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.real_server import RealServer, start

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

PAGES = ["/accounts/login/", "/admin/login/", "/accounts/password_reset/"]


@pytest.fixture(scope="module")
def behind_tls_proxy(django_db_setup: None, django_db_blocker: Any) -> Iterator[RealServer]:
    """Momor under uvicorn as a TLS proxy fronts it: secure cookies, the proxy's header named."""
    with django_db_blocker.unblock():
        server = start(
            "uvicorn",
            REDIS_URL="",
            MOMOR_SECURE_COOKIES="1",
            MOMOR_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
        )
    yield server
    server.stop()


def policy_of(response: httpx.Response) -> dict[str, str]:
    found = response.headers["content-security-policy"]
    directives = (part.strip().partition(" ") for part in found.split(";") if part.strip())
    return {name: value for name, _, value in directives}


@pytest.mark.parametrize("path", PAGES)
def test_every_page_carries_the_browsers_protections(gateway: str, path: str) -> None:
    response = httpx.get(gateway + path, timeout=10)
    assert response.status_code == 200
    policy = policy_of(response)
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["base-uri"] == "'self'"
    assert policy["form-action"] == "'self'"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"


def test_a_request_the_proxy_took_over_https_gets_hsts(behind_tls_proxy: RealServer) -> None:
    secure = httpx.get(
        behind_tls_proxy.url + "/accounts/login/",
        headers={"x-forwarded-proto": "https"},
        timeout=10,
    )
    assert secure.status_code == 200, behind_tls_proxy.output()[-2000:]
    assert secure.headers["strict-transport-security"] == "max-age=31536000"
    assert "secure" in secure.headers["set-cookie"].lower()

    plain = httpx.get(behind_tls_proxy.url + "/accounts/login/", timeout=10)
    assert "strict-transport-security" not in plain.headers  # browsers ignore it over HTTP
