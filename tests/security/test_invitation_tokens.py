"""Attacker-style: an invitation's token rides in its link's path, which access logs keep and
a page's Referer would carry. Opening the link puts the token in the session and sends the
browser on to a URL without it; the access log masks it; the link's answer sends no Referer."""

from __future__ import annotations

import time

import httpx
import pytest

from accounts.invitations import invitation_send
from accounts.models import Role
from tests.conftest import make_org
from tests.real_server import RealServer
from tests.security.roles_helpers import person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

ACCEPT = "/invitations/accept/"


def an_invitation_link() -> str:
    acme = make_org("acme")
    links: list[str] = []

    def link_for(token: str) -> str:
        links.append(f"/invitations/{token}/")
        return links[-1]

    invitation_send(
        organization=acme,
        email="carol@example.com",
        role=Role.MEMBER,
        invited_by=person("alice", acme, Role.OWNER),
        link_for=link_for,
    )
    return links[0]


def logged(server: RealServer, text: str) -> str:
    deadline = time.monotonic() + 5
    while text not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.output()


def test_the_token_leaves_the_address_bar_the_referer_and_the_access_log(
    uvicorn: RealServer,
) -> None:
    link = an_invitation_link()
    token = link.split("/")[2]
    with httpx.Client(base_url=uvicorn.url, timeout=10) as browser:
        opened = browser.get(link)
        assert (opened.status_code, opened.headers["location"]) == (302, ACCEPT)
        assert opened.headers["referrer-policy"] == "no-referrer"
        page = browser.get(ACCEPT)
        assert page.status_code == 200
        assert 'id="set-password"' in page.text and token not in page.text
        # same-origin: the page's URL holds no token, and its forms post with their Origin
        assert page.headers["referrer-policy"] == "same-origin"

    output = logged(uvicorn, f"GET {ACCEPT} HTTP/1.1")
    assert token not in output
    assert "GET /invitations/****/ HTTP/1.1" in output


def test_the_accept_page_without_an_opened_link_is_gone(uvicorn: RealServer) -> None:
    answer = httpx.get(uvicorn.url + ACCEPT, timeout=10)
    assert answer.status_code == 410
