"""The provider catalog: as a file (the shipped default, the rules of its fields and the loader
that upserts one), and in memory (`snapshot`, kept current with the callers' identities by
`state`), with the provider places accounts' saved keys ask for."""

from __future__ import annotations

from pathlib import Path

from gateway.catalog.loader import CatalogError, CatalogReport, catalog_load

DEFAULT_CATALOG = Path(__file__).with_name("default.toml")

__all__ = ["DEFAULT_CATALOG", "CatalogError", "CatalogReport", "catalog_load"]
