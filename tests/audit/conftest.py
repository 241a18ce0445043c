"""The audit tests work on the admin tests' world: an organization with its keys, a provider
with a region, a model, an offering, a generation and a ledger entry."""

from __future__ import annotations

from tests.test_admin import world  # noqa: F401 - the fixture, shared with these tests
