"""Attacker-style: dates, moments, cursors and ids at the edge of the calendar and of their
columns, in the generations page, its CSV export, the management API and `/v1/generation`.
A date or moment past the days Momor takes (years 2 to 9998) is a 400 naming the parameter (the
page shows it), a cursor it cannot read is the first page (UI) or DRF's 404, a NUL in an id
finds nothing: never a 500."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from accounts.models import KeyKind, Role
from tests.conftest import make_key, make_org
from tests.security.roles_helpers import Browser, manage, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

OUT_OF_RANGE = [
    ("until", "9999-12-31"),
    ("since", "9999-12-31"),
    ("until", "0001-01-01"),
    ("since", "0001-01-01"),
]


@pytest.fixture
def acme(gateway: str) -> Any:
    acme = make_org("acme")
    person("alice", acme, Role.OWNER)
    return acme


@pytest.fixture
def alice(gateway: str, acme: Any) -> Iterator[Browser]:
    browser = Browser(gateway)
    assert browser.sign_in("alice").status_code == 302
    yield browser
    browser.close()


@pytest.fixture
def ops(acme: Any) -> str:
    return make_key(acme, name="ops", kind=KeyKind.MANAGEMENT)[0]


@pytest.mark.parametrize(("name", "day"), OUT_OF_RANGE)
def test_the_generations_page_shows_a_day_out_of_range(alice: Browser, name: str, day: str) -> None:
    label = {"since": "From", "until": "To"}[name]
    page = alice.get("/generations/", params={name: day})
    assert page.status_code == 400
    assert f"{label}: A day between 0002-01-01 and 9998-12-31." in page.text
    picked = alice.get("/generations/", params={name: day}, headers={"HX-Request": "true"})
    assert picked.status_code == 200  # htmx swaps a 200 in: the error shows where it was picked
    assert f"{label}: A day between 0002-01-01 and 9998-12-31." in picked.text


@pytest.mark.parametrize(("name", "day"), OUT_OF_RANGE)
def test_the_csv_export_refuses_a_day_out_of_range(alice: Browser, name: str, day: str) -> None:
    export = alice.get("/generations/export.csv", params={name: day})
    assert export.status_code == 400
    assert export.text == f"{name}: A day between 0002-01-01 and 9998-12-31.\n"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        *OUT_OF_RANGE,
        ("until", "9999-12-31T23:59:59-23:00"),
        ("since", "0001-01-01T00:00:00+23:00"),
    ],
)
def test_the_management_api_refuses_a_moment_out_of_range(
    gateway: str, ops: str, name: str, value: str
) -> None:
    answer = manage(gateway, ops, "GET", "generations/", params={name: value})
    assert answer.status_code == 400, answer.text
    assert answer.json() == {name: "A date or moment between 0002-01-01 and 9998-12-31."}


def test_the_last_and_first_days_taken_answer(gateway: str, ops: str) -> None:
    edges = {"since": "0002-01-01T00:00:00+23:00", "until": "9998-12-31T23:59:59-23:00"}
    assert manage(gateway, ops, "GET", "generations/", params=edges).status_code == 200
    days = {"since": "0002-01-01", "until": "9998-12-31"}
    assert manage(gateway, ops, "GET", "generations/", params=days).status_code == 200


@pytest.mark.parametrize("name", ["model", "provider", "status", "session", "app"])
def test_a_nul_in_a_filter_is_a_400_naming_it(gateway: str, ops: str, name: str) -> None:
    answer = manage(gateway, ops, "GET", "generations/", params={name: "a\x00b"})
    assert answer.status_code == 400, answer.text
    assert list(answer.json()) == [name]


@pytest.mark.parametrize(
    "position",
    ["99999999999999999999", "9999-12-31 23:59:59-23:00", "0001-01-01 00:00:00+23:00", "x\x00"],
)
@pytest.mark.parametrize("route", ["generations/", "ledger/"])
def test_a_cursor_the_api_cannot_read_is_its_404(
    gateway: str, ops: str, route: str, position: str
) -> None:
    cursor = base64.b64encode(f"p={position}".encode()).decode()
    answer = manage(gateway, ops, "GET", route, params={"cursor": cursor})
    assert answer.status_code == 404, answer.text
    assert answer.json() == {"detail": "Invalid cursor"}


@pytest.mark.parametrize(
    "cursor",
    [
        "9999-12-31T23:59:59-23:00_1",
        "0001-01-01T00:00:00+23:00_1",
        "2026-01-01T00:00:00+00:00_99999999999999999999",
        "2026-01-01T00:00:00+00:00_\u0663",
    ],
)
@pytest.mark.parametrize("direction", ["before", "after"])
def test_a_page_cursor_the_ui_cannot_read_is_the_first_page(
    alice: Browser, direction: str, cursor: str
) -> None:
    assert alice.get("/generations/", params={direction: cursor}).status_code == 200


def test_a_nul_in_a_generation_id_finds_nothing(alice: Browser, gateway: str, ops: str) -> None:
    assert alice.get("/v1/generation", params={"id": "a\x00b"}).status_code == 404
    assert alice.get("/generations/a%00b/").status_code == 404
