"""What the attacker-style role tests share: a person's browser over real HTTP (cookies, the
CSRF token, the sign-in form), the management API by key, and waiting on the gateway."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from django.conf import settings

from accounts.models import Membership, Organization, Role
from tests.conftest import make_user

PASSWORD_OF = "{}-pass-123!"


class Browser:
    """One person's browser against the running Momor: keeps cookies, sends the CSRF token
    with every form, and can come from any loopback address (`address`)."""

    def __init__(self, base_url: str, *, address: str = "127.0.0.1") -> None:
        transport = httpx.HTTPTransport(local_address=address)
        self.http = httpx.Client(base_url=base_url, transport=transport, timeout=15)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def post(self, path: str, data: dict[str, str] | None = None) -> httpx.Response:
        """A form post as the page would send it (the CSRF cookie is fetched first)."""
        if settings.CSRF_COOKIE_NAME not in self.http.cookies:
            self.http.get("/accounts/login/")
        token = self.http.cookies[settings.CSRF_COOKIE_NAME]
        return self.http.post(path, data={**(data or {}), "csrfmiddlewaretoken": token})

    def api(self, method: str, path: str, body: Any = None) -> httpx.Response:
        """A management API call on this browser's session (with its CSRF token)."""
        token = self.http.cookies.get(settings.CSRF_COOKIE_NAME, "")
        headers = {"X-CSRFToken": token}
        return self.http.request(method, f"/api/manage/{path}", json=body, headers=headers)

    def sign_in(
        self, username: str, password: str | None = None, *, path: str = "/accounts/login/"
    ) -> httpx.Response:
        self.http.get(path)
        password = password if password is not None else PASSWORD_OF.format(username)
        return self.post(path, {"username": username, "password": password})

    def session_key(self) -> str | None:
        return self.http.cookies.get(settings.SESSION_COOKIE_NAME)

    def close(self) -> None:
        self.http.close()


def manage(base_url: str, key: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A management API call with a Bearer key."""
    headers = {"authorization": f"Bearer {key}"}
    return httpx.request(
        method, f"{base_url}/api/manage/{path}", headers=headers, timeout=15, **kwargs
    )


def person(name: str, org: Organization, role: str = Role.MEMBER) -> Any:
    return make_user(name, org, role)


def membership(user: Any, org: Organization) -> Membership:
    return Membership.objects.get(user=user, organization=org)


def eventually(check: Callable[[], bool], *, within: float = 10.0, what: str = "") -> None:
    """Wait until `check()` holds; the gateway refreshes every MOMOR_REFRESH_SECONDS."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"still not so after {within} s: {what}"
        time.sleep(0.1)
