"""The attacker group: each test here plays someone trying to read a secret, reach an address
or tie up the server (`-m security` runs them alone). The gateway's fixtures are shared."""

from __future__ import annotations

from tests.gateway.conftest import fake_token_endpoint, upstream_client, world  # noqa: F401
