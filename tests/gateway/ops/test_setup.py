"""The metrics port of its own listens on loopback unless MOMOR_METRICS_ADDRESS names another
address: tenants' figures are not on a public address by default."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.ops import exposition, setup


def test_a_port_of_their_own_listens_on_loopback_unless_told(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bound: list[tuple[int, str]] = []
    monkeypatch.setattr(
        exposition, "serve_on_port", lambda port, address="": bound.append((port, address))
    )
    settings.MOMOR_METRICS_PORT = 9464
    setup.serve_metrics_port()
    settings.MOMOR_METRICS_ADDRESS = "10.0.0.5"
    setup.serve_metrics_port()
    assert bound == [(9464, "127.0.0.1"), (9464, "10.0.0.5")]
