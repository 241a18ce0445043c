"""Billing tests use the gateway tests' catalog on the fake upstream."""

from __future__ import annotations

from tests.gateway.conftest import world

__all__ = ["world"]
