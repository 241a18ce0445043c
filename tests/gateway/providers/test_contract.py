"""The provider contract's own rules: which failure lets failover move on to the next
candidate. (Failover itself, over real HTTP, is tests/gateway/test_failover.py.)"""

from __future__ import annotations

import pytest

from gateway.providers.contract import ErrorObject, Failure

SHAPED: ErrorObject = {"message": "bad", "type": "invalid_request_error", "param": None, "code": 1}


@pytest.mark.parametrize("status", [400, 404, 413, 422])
def test_a_providers_error_object_about_the_call_stops_it(status: int) -> None:
    assert not Failure(status, "bad", SHAPED).moves_on


@pytest.mark.parametrize("status", [401, 403, 408, 429, 500, 502, 503, 529, None])
def test_a_refused_key_a_rate_limit_a_timeout_or_a_server_error_moves_on(
    status: int | None,
) -> None:
    assert Failure(status, "bad", SHAPED).moves_on


@pytest.mark.parametrize("status", [400, 404, 422, None])
def test_a_failure_without_the_providers_error_object_moves_on(status: int | None) -> None:
    assert Failure(status, f"HTTP {status}").moves_on
