"""Tokens in links' paths are masked in log lines, and nothing else is."""

from __future__ import annotations

import pytest

from accounts.link_tokens import mask_link_tokens


@pytest.mark.parametrize(
    ("line", "masked"),
    [
        (
            '"GET /invitations/WzEsInRva2VuIl0:1vQx:AbC-d_e/ HTTP/1.1" 302',
            '"GET /invitations/****/ HTTP/1.1" 302',
        ),
        (
            "GET /accounts/login/?next=/invitations/WzEs:1vQx:AbC/ HTTP/1.1",
            "GET /accounts/login/?next=/invitations/****/ HTTP/1.1",
        ),
        ("POST /invitations/WzEs:1vQx:AbC HTTP/1.1", "POST /invitations/**** HTTP/1.1"),
        ("GET /invitations/accept/ HTTP/1.1", "GET /invitations/accept/ HTTP/1.1"),
        (
            "GET /accounts/reset/MQ/cz8k2a-0123456789abcdef/ HTTP/1.1",
            "GET /accounts/reset/MQ/****/ HTTP/1.1",
        ),
        (
            "GET /accounts/reset/MQ/set-password/ HTTP/1.1",
            "GET /accounts/reset/MQ/set-password/ HTTP/1.1",
        ),
        (
            "POST /members/invitations/3/revoke/ HTTP/1.1",
            "POST /members/invitations/3/revoke/ HTTP/1.1",
        ),
        (
            "GET /login/?next=/invitations/WzEs%3A1vQx%3AAbC/ HTTP/1.1",
            "GET /login/?next=/invitations/****/ HTTP/1.1",
        ),
    ],
)
def test_a_token_in_a_links_path_is_masked(line: str, masked: str) -> None:
    assert mask_link_tokens(line) == masked


def test_a_long_line_is_masked_in_linear_time() -> None:
    line = "/invitations/" + "a" * 200_000 + ": /reset/" + "b/" * 100_000
    assert mask_link_tokens(line).startswith("/invitations/**** /reset/b/****/b/")
    assert mask_link_tokens("/invitations/" * 50_000) == "/invitations/" * 50_000
