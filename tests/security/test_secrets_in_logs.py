"""Secrets in logs and error reports: a log line quoting a provider key (saved or Momor's own),
a Momor key, a Bearer token or a URL's password shows them masked, in the message and in the
traceback; an error while a secret is being saved reaches the admins' mail and the debug page
without it (POST data and frame variables)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, cast

import httpx
import pytest
from django.conf import settings
from django.test import Client
from django.views.debug import ExceptionReporter

from accounts.models import Organization, SavedKey
from gateway.models import Provider
from momor.logs import ScrubSecrets
from tests.child_process import manage
from tests.conftest import make_user
from tests.gateway.calls import settle
from tests.gateway.conftest import World
from tests.real_server import RealServer

pytestmark = pytest.mark.security

SAVED = "sk-proj-acmeSavedKey0123456789abcdefQzXw"
ENV_KEY = "sk-ant-api03-momorEnvKey0123456789abcdefPvKy"
MOMOR_KEY = "sk-momor-" + "A" * 43
BEARER = "ya29.c0AfH6SMBx0123456789abcdefTokn"
LOGGING = """
import logging
from accounts.models import SavedKey
from gateway.catalog.snapshot import catalog_build
saved = SavedKey.objects.get().secret
env_key = catalog_build().providers["anthropic"].momor_key
log = logging.getLogger("gateway.relay.failover")
log.warning("provider said: %s", "Incorrect API key provided: " + saved)
log.warning("upstream refused the key %s", env_key)
log.warning("client sent %s with Authorization: Bearer %s", "{momor_key}", "{bearer}")
log.warning("broker at %s unreachable", "redis://user:hunter2-password@redis.internal:6379/0")
try:
    raise RuntimeError("upstream refused " + saved)
except RuntimeError:
    log.exception("call failed")
"""


@pytest.mark.django_db(transaction=True)
def test_every_log_line_masks_keys(acme: Organization) -> None:
    row = SavedKey(organization=acme, provider="openai")
    row.set_secret(SAVED)
    row.save()
    Provider.objects.create(
        name="anthropic", api="anthropic", base_url="https://api.anthropic.com",
        key_env="MOMOR_PROVIDER_KEY_ANTHROPIC",
    )  # fmt: skip
    code = LOGGING.format(momor_key=MOMOR_KEY, bearer=BEARER)
    done = manage("shell", "-c", code, MOMOR_PROVIDER_KEY_ANTHROPIC=ENV_KEY)
    assert done.returncode == 0, done.stderr
    logged = done.stderr
    for secret in (SAVED, ENV_KEY, MOMOR_KEY, BEARER, "hunter2-password"):
        assert secret not in logged
    assert "provider said: Incorrect API key provided: ****QzXw\n" in logged
    assert "upstream refused the key ****PvKy\n" in logged
    assert f"client sent ****AAAA with Authorization: Bearer ****{BEARER[-4:]}\n" in logged
    assert "broker at redis://user:****@redis.internal:6379/0 unreachable\n" in logged
    assert "RuntimeError: upstream refused ****QzXw\n" in logged


def save_a_key(world: World) -> httpx.Response:
    """acme's owner saves a provider key in the UI while Momor cannot encrypt (a 500)."""
    client = Client()
    client.force_login(make_user("alice", world.org, "owner"))
    csrf = "a" * 32
    cookies = {
        settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value,
        settings.CSRF_COOKIE_NAME: csrf,
    }
    form = {"provider": "openai", "secret": SAVED, "label": "", "csrfmiddlewaretoken": csrf}
    return httpx.post(f"{world.url}/provider-keys/", data=form, cookies=cookies, timeout=30)


def test_the_admins_error_mail_holds_no_secret(
    world: World, settings: Any, mailoutbox: list[Any]
) -> None:
    settings.ADMINS = [("Ops", "ops@example.com")]
    settings.ENCRYPTION_KEY = ""
    settle()
    response = save_a_key(world)
    assert response.status_code == 500
    (mail,) = mailoutbox
    assert "MOMOR_ENCRYPTION_KEY is required" in mail.body
    assert "secret = '********************'" in mail.body
    assert SAVED not in mail.body and SAVED[4:-4] not in mail.body


def test_the_debug_page_holds_no_secret(world: World, settings: Any) -> None:
    settings.DEBUG = True
    settings.ENCRYPTION_KEY = ""
    response = save_a_key(world)
    assert response.status_code == 500
    assert "MOMOR_ENCRYPTION_KEY is required" in response.text
    assert SAVED not in response.text and SAVED[4:-4] not in response.text


class Unprintable:
    """A value whose repr fails, as a model's does when its __str__ follows a relation over a
    database connection that was closed under it."""

    def __repr__(self) -> str:
        raise ConnectionError("terminating connection due to administrator command")


def test_a_frame_value_whose_repr_fails_leaves_the_report_whole_and_masked() -> None:
    def save(secret: str, membership: object) -> None:
        raise ValueError("MOMOR_ENCRYPTION_KEY is required to store provider keys")

    try:
        save(SAVED, Unprintable())
    except ValueError:
        reporter = ExceptionReporter(None, *sys.exc_info())
    assert "MOMOR_ENCRYPTION_KEY is required" in reporter.get_traceback_text()
    [frame] = [f for f in reporter.get_traceback_data()["frames"] if f["function"] == "save"]
    assert frame["vars"] == [
        ("secret", "'********************'"),
        ("membership", "'<Unprintable: its repr failed (ConnectionError)>'"),
    ]
    assert SAVED not in reporter.get_traceback_html()


class Kept(logging.Handler):
    """Keeps the records it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_log_argument_whose_str_fails_does_not_raise_into_the_caller() -> None:
    handler = Kept()
    handler.addFilter(ScrubSecrets())
    logger = logging.getLogger("tests.unprintable")
    logger.addHandler(handler)
    logger.propagate = False  # pytest's own capture would format it, and raise
    try:
        logger.warning("calling with %s failed for %s", MOMOR_KEY, Unprintable())
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    [record] = handler.records
    masked, unprintable = cast(tuple[object, object], record.args)
    assert isinstance(masked, str) and MOMOR_KEY not in masked
    assert isinstance(unprintable, Unprintable)


def test_the_servers_access_log_masks_a_key_in_a_query_string(uvicorn: RealServer) -> None:
    """The ASGI server's own handlers get the filter too: a key pasted into a URL by mistake
    is masked in the access log."""
    response = httpx.get(f"{uvicorn.url}/v1/models", params={"api_key": MOMOR_KEY})
    assert response.status_code in (200, 503)
    deadline = time.monotonic() + 5
    while "/v1/models?api_key=" not in uvicorn.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    logged = uvicorn.output()
    assert "GET /v1/models?api_key=****AAAA HTTP/1.1" in logged
    assert MOMOR_KEY not in logged
