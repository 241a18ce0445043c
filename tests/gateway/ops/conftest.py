"""Every test here scrapes /metrics with its token: without one, Momor's port does not serve
it (see tests/security/test_public_figures.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.ops.scrape import SCRAPE_TOKEN


@pytest.fixture(autouse=True)
def metrics_token(settings: Any) -> None:
    settings.MOMOR_METRICS_TOKEN = SCRAPE_TOKEN
