"""Attacker-style, by property (hypothesis): every add and change form of the operators' admin
(walked from the admin site's registry), each field fed out-of-range and malformed values
(huge and negative numbers, NaN and Infinity, NUL characters, long and unicode text, dates off
the calendar) on top of what the form shows. None answers a 500, and a form that is refused
(answered with its errors rather than a redirect) stores nothing."""

from __future__ import annotations

from decimal import Decimal
from html.parser import HTMLParser
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import make_key, make_org
from tests.gateway.conftest import build_catalog
from tests.security.test_malformed_input import PROPERTY, texts

pytestmark = [pytest.mark.security, pytest.mark.django_db]

SKIPPED = {"csrfmiddlewaretoken", "_save", "_continue", "_addanother", "_saveasnew"}


class _Form(HTMLParser):
    """The fields of the admin page's main form, with the values it shows."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        name = found.get("name")
        if tag == "input" and name and name not in SKIPPED:
            kind = found.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in found:
                return
            self.values[name] = found.get("value") or ("on" if kind == "checkbox" else "")
        elif tag == "select" and name:
            self._select = name
            self.values.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in found:
            self.values[self._select] = found.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def shown(client: Client, url: str) -> dict[str, str] | None:
    """The form's fields as the page shows them; None where the operator may not use it."""
    page = client.get(url)
    assert page.status_code < 500, url
    if page.status_code != 200:
        return None
    form = _Form()
    form.feed(page.content.decode())
    return form.values


def rows() -> dict[str, int]:
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


@pytest.fixture
def operator(admin_client: Client, fake: Any) -> Client:
    """A staff superuser's session, over a catalog and an organization with a key."""
    build_catalog(fake.url)
    org = make_org("acme", credits=Decimal(100))
    make_key(org, name="ops")
    return admin_client


def admin_pages() -> list[tuple[str, str]]:
    return [(model._meta.app_label, model._meta.model_name or "") for model in admin.site._registry]


@pytest.mark.parametrize(("app", "model"), admin_pages(), ids=lambda v: str(v))
@pytest.mark.parametrize("view", ["add", "change"])
@PROPERTY
@given(data=st.data())
def test_every_admin_form_refuses_malformed_input_without_a_500(
    operator: Client, app: str, model: str, view: str, data: Any
) -> None:
    if view == "add":
        url = f"/admin/{app}/{model}/add/"
    else:
        first = apps.get_model(app, model)._default_manager.order_by("pk").first()
        if first is None:
            return
        url = f"/admin/{app}/{model}/{first.pk}/change/"
    values = shown(operator, url)
    if values is None or not values:
        return
    names = sorted(values)
    # drawn by position, so the draws stay the same whatever an earlier example saved
    picks = data.draw(st.lists(st.tuples(st.integers(0, 999), texts), min_size=1, max_size=4))
    changed = {names[at % len(names)]: text for at, text in picks}
    before = rows()
    response = operator.post(url, {**values, **changed})
    assert response.status_code < 500, f"{url} {changed!r}"
    if response.status_code != 302:
        assert rows() == before, f"{url} {changed!r}: refused but stored"


@pytest.mark.parametrize(
    "url",
    [
        "/admin/gateway/model/?q=%00",
        "/admin/gateway/model/a%00b/change/",
        "/admin/accounts/organization/?slug__exact=%00",
    ],
)
def test_a_nul_in_an_admin_url_is_a_400(operator: Client, url: str) -> None:
    response = operator.get(url)
    assert response.status_code == 400, response.status_code
    assert b"NUL" in response.content


def test_a_nul_in_an_admin_form_is_a_400_and_stores_nothing(operator: Client) -> None:
    before = rows()
    response = operator.post("/admin/gateway/offering/add/", {"model": "\x00"})
    assert response.status_code == 400
    assert rows() == before


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/accounts/login/", {"username": "a\x00b", "password": "x"}),
        ("/admin/login/", {"username": "a\x00b", "password": "x"}),
        ("/accounts/password_reset/", {"email": "a\x00@example.com"}),
    ],
)
def test_a_nul_in_a_sign_in_form_is_a_400_not_a_500(
    client: Client, path: str, form: dict[str, str]
) -> None:
    response = Client(raise_request_exception=False).post(path, form)
    assert response.status_code == 400, response.status_code
