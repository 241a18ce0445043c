"""Attacker-style: the management API's schema and its docs page are for signed-in members and
management keys alone, and the docs page loads its scripts from Momor's own static files
(npm's swagger-ui-dist, pinned in package-lock.json), never from a CDN into the members' origin."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from accounts.models import Organization, Role
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import Browser, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

SCHEMA, DOCS = "/api/manage/schema/", "/api/manage/docs/"


@pytest.fixture
def acme(gateway: str) -> Organization:
    org = make_org("acme", credits=Decimal(1))
    person("alice", org, Role.MEMBER)
    return org


@pytest.mark.parametrize("path", [SCHEMA, DOCS, DOCS + "?script="])
def test_an_outsider_gets_neither_the_schema_nor_the_docs(
    acme: Organization, gateway: str, path: str
) -> None:
    for headers in ({}, {"authorization": "Bearer sk-momor-not-a-key"}):
        answer = httpx.get(gateway + path, headers=headers, timeout=10)
        assert answer.status_code in (401, 403), (path, answer.status_code)
        assert "openapi" not in answer.text and "swagger" not in answer.text.lower()


def test_an_inference_key_gets_no_schema(acme: Organization, gateway: str) -> None:
    key, _ = make_key(acme, name="inference")
    answer = httpx.get(gateway + SCHEMA, headers={"authorization": f"Bearer {key}"}, timeout=10)
    assert answer.status_code in (401, 403)


def test_a_management_key_gets_the_schema(acme: Organization, gateway: str) -> None:
    key, _ = make_key(acme, name="ops", kind="management")
    answer = httpx.get(gateway + SCHEMA, headers={"authorization": f"Bearer {key}"}, timeout=10)
    assert answer.status_code == 200
    assert "openapi:" in answer.text


def test_a_member_reads_the_docs_from_momors_own_static_files(
    acme: Organization, gateway: str
) -> None:
    browser = Browser(gateway)
    try:
        assert browser.sign_in("alice").status_code == 302
        assert browser.get(SCHEMA).status_code == 200
        page = browser.get(DOCS)
        assert page.status_code == 200
        assert "cdn." not in page.text and "https://" not in page.text
        for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"):
            assert f'"/static/vendor/swagger-ui/{asset}"' in page.text
            assert browser.get(f"/static/vendor/swagger-ui/{asset}").status_code == 200
        assert "<script>" not in page.text  # the page's own script is a file of its own too
        assert browser.get(DOCS + "?script=").status_code == 200
    finally:
        browser.close()
