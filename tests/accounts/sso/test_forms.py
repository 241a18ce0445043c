"""A claimed domain is written as addresses write it: lowercase, without a trailing dot, an
internationalized one in its ASCII form; anything else is refused."""

from __future__ import annotations

import pytest
from django import forms

from accounts.sso.forms import ascii_domain


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("Acme.Test", "acme.test"),
        (" mail.acme.example. ", "mail.acme.example"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("a-1.co", "a-1.co"),
    ],
)
def test_a_domain_is_kept_as_addresses_write_it(typed: str, stored: str) -> None:
    assert ascii_domain(typed) == stored


@pytest.mark.parametrize(
    "typed", ["localhost", "@acme.test", "alice@acme.test", "-acme.test", "acme-.test", "a..b", ""]
)
def test_what_is_no_domain_of_an_address_is_refused(typed: str) -> None:
    with pytest.raises(forms.ValidationError, match="Enter a domain as addresses write it"):
        ascii_domain(typed)
