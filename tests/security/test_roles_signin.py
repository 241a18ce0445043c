"""Attacker-style: guessing passwords on the sign-in pages (the UI's and the admin's), and
fixing a session before the victim signs in. After MOMOR_SIGNIN_FAILURES failures for one
account, or MOMOR_SIGNIN_FAILURES_PER_ADDRESS from one address, within the window, every
sign-in of it is refused, right password or not, until the window ends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore

from accounts.models import Organization, Role
from tests.conftest import make_org
from tests.security.roles_helpers import Browser, person

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

UI, ADMIN = "/accounts/login/", "/admin/login/"


@pytest.fixture
def acme(gateway: str) -> Organization:
    org = make_org("acme", credits=Decimal(1))
    alice = person("alice", org, Role.OWNER)
    alice.is_staff = alice.is_superuser = True
    alice.save()
    person("bob", org)
    return org


@pytest.fixture
def from_address(gateway: str) -> Iterator[Any]:
    made: list[Browser] = []

    def browser(address: str) -> Browser:
        made.append(Browser(gateway, address=address))
        return made[-1]

    yield browser
    for one in made:
        one.close()


def fail(browser: Browser, username: str, times: int, path: str = UI) -> None:
    for _ in range(times):
        assert browser.sign_in(username, "wrong-password", path=path).status_code == 200


def refused(response: Any) -> bool:
    return response.status_code == 429 and "Too many failed sign-ins" in response.text


def test_an_account_is_refused_after_its_failures_from_every_address_that_failed(
    acme: Organization, from_address: Any
) -> None:
    fail(from_address("127.0.0.2"), "alice", settings.MOMOR_SIGNIN_FAILURES - 1)
    fail(from_address("127.0.0.3"), "alice", 1)

    for address in ("127.0.0.2", "127.0.0.3"):
        guesser = from_address(address)
        answer = guesser.sign_in("alice")
        assert refused(answer)
        assert 0 < int(answer.headers["retry-after"]) <= 2 * settings.MOMOR_SIGNIN_WINDOW_SECONDS
        assert guesser.get("/keys/").status_code == 302  # not signed in
    assert from_address("127.0.0.2").sign_in("bob").status_code == 302  # bob is not alice


def test_a_locked_account_still_lets_a_right_password_in_from_an_address_that_never_failed(
    acme: Organization, from_address: Any
) -> None:
    """Anyone can lock an account with a few wrong passwords; its owner, from an address that
    has not failed on it, still signs in. Such an address gets one guess: a failure locks it
    out too."""
    fail(from_address("127.0.0.17"), "alice", settings.MOMOR_SIGNIN_FAILURES)
    assert refused(from_address("127.0.0.17").sign_in("alice"))

    assert from_address("127.0.0.18").sign_in("alice").status_code == 302
    fail(from_address("127.0.0.19"), "alice", settings.MOMOR_SIGNIN_FAILURES)
    fail(from_address("127.0.0.20"), "alice", 1)
    assert refused(from_address("127.0.0.20").sign_in("alice"))


@pytest.mark.parametrize(
    ("failing", "signing"),
    [("\uff42ob", "bob"), ("bob", "\uff42ob"), ("\uff42\uff4f\uff42", "bob"), (" bob ", "bob")],
)
def test_a_look_alike_username_counts_as_the_account_it_signs_in_as(
    acme: Organization, from_address: Any, failing: str, signing: str
) -> None:
    """Django signs in the NFKC form of the name (full-width letters are plain ones): the
    throttle counts the account that name resolves to."""
    guesser = from_address("127.0.0.21")
    fail(guesser, failing, settings.MOMOR_SIGNIN_FAILURES)
    assert refused(guesser.sign_in(signing, "bob-pass-123!"))
    assert guesser.get("/keys/").status_code == 302  # not signed in


def test_the_admins_sign_in_is_throttled_too_and_shares_the_count(
    acme: Organization, from_address: Any
) -> None:
    guesser = from_address("127.0.0.6")
    fail(guesser, "alice", settings.MOMOR_SIGNIN_FAILURES - 1, path=ADMIN)
    fail(guesser, "alice", 1, path=UI)
    assert refused(guesser.sign_in("alice", path=ADMIN))
    assert refused(guesser.sign_in("alice", path=UI))


def test_sign_in_works_again_once_the_window_has_passed(
    acme: Organization, from_address: Any, settings: Any
) -> None:
    window = settings.MOMOR_SIGNIN_WINDOW_SECONDS = 5
    time.sleep(window - time.time() % window + 0.05)  # windows are aligned on the clock
    browser = from_address("127.0.0.8")
    fail(browser, "alice", settings.MOMOR_SIGNIN_FAILURES)
    answer = browser.sign_in("alice")
    assert refused(answer)
    # failures of this window count in the next one too
    assert window < int(answer.headers["retry-after"]) <= 2 * window
    time.sleep(int(answer.headers["retry-after"]) + 0.2)
    assert browser.sign_in("alice").status_code == 302


def test_failures_that_straddle_a_windows_edge_still_reach_the_limit(
    acme: Organization, from_address: Any, settings: Any
) -> None:
    """Windows are aligned on the clock: guesses just before an edge and just after it count
    together, so the edge does not let an attacker through with twice the limit. (A sign-in
    hashes its password: each takes up to a second or two on a busy machine, so the window is
    wide enough for the guesses on either side of the edge.)"""
    window = settings.MOMOR_SIGNIN_WINDOW_SECONDS = 12
    time.sleep(window - time.time() % window + window - 8)  # 8 s before an edge
    before_edge = settings.MOMOR_SIGNIN_FAILURES - 2
    guesser = from_address("127.0.0.15")
    fail(from_address("127.0.0.14"), "alice", before_edge)
    assert time.time() % window > window - 8  # still in the first window
    time.sleep(window - time.time() % window + 0.1)
    fail(guesser, "alice", settings.MOMOR_SIGNIN_FAILURES - before_edge)

    answer = guesser.sign_in("alice")  # the right password, from an address that guessed
    assert time.time() % window < window - 0.5  # still in the window after the edge
    assert refused(answer)
    assert 0 < int(answer.headers["retry-after"]) <= 2 * window


def test_a_success_clears_the_accounts_failures(acme: Organization, from_address: Any) -> None:
    browser = from_address("127.0.0.9")
    fail(browser, "bob", settings.MOMOR_SIGNIN_FAILURES - 1)
    assert browser.sign_in("bob").status_code == 302
    other = from_address("127.0.0.10")
    fail(other, "bob", settings.MOMOR_SIGNIN_FAILURES - 1)
    assert other.sign_in("bob").status_code == 302


@pytest.mark.parametrize("path", [UI, ADMIN])
def test_signing_in_gives_a_new_session(acme: Organization, from_address: Any, path: str) -> None:
    """A session planted in the victim's browser is not the one they are signed in with."""
    planted = SessionStore()
    planted["planted"] = True
    planted.create()
    browser = from_address("127.0.0.11")
    browser.http.cookies.set(settings.SESSION_COOKIE_NAME, planted.session_key or "", "127.0.0.1")
    assert browser.sign_in("alice", path=path).status_code == 302
    assert browser.session_key() not in (None, planted.session_key)
    assert "_auth_user_id" not in SessionStore(planted.session_key).load()


def test_without_redis_each_process_still_counts(
    acme: Organization, from_address: Any, settings: Any
) -> None:
    """Redis unreachable (nothing listens on port 1): the counts fall back to the process."""
    unreachable = {"BACKEND": "django.core.cache.backends.redis.RedisCache"}
    settings.CACHES = {"default": {**unreachable, "LOCATION": "redis://127.0.0.1:1/0"}}
    guesser = from_address("127.0.0.12")
    fail(guesser, "bob", settings.MOMOR_SIGNIN_FAILURES)
    assert refused(guesser.sign_in("bob"))
