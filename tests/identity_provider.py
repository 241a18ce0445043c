"""A real OpenID Connect identity provider for the single sign-on tests: npm's oidc-provider
(tests/clients/oidc_idp.mjs) run by the test clients' Node.js 22 on a free loopback port, with
its own login and consent pages."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from tests.node_clients import CLIENTS, NODE


@contextmanager
def identity_provider(client: dict[str, Any], accounts: dict[str, Any]) -> Iterator[str]:
    """The issuer URL of an identity provider that knows `client` (client_id, client_secret,
    redirect_uris) and signs in `accounts` (each login's claims); stopped on leaving."""
    assert NODE.exists(), "the test clients are not installed: run scripts/test.sh once"
    inputs = orjson.dumps({"client": client, "accounts": accounts}).decode()
    process = subprocess.Popen(  # noqa: S603 - our own script, with arguments written here
        [NODE, CLIENTS / "oidc_idp.mjs", inputs],
        cwd=CLIENTS,
        env={"PATH": os.environ["PATH"]},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()
        assert announced, "the identity provider did not start"
        yield orjson.loads(announced)["issuer"]
    finally:
        process.terminate()
        process.wait(timeout=10)
