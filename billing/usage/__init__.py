"""Reads of an organization's usage: the daily rollups (written as records are stored, rebuilt
by the backfill), the members' pages' reads and CSV rows, keyset pages, and one generation as
its owner reads it."""
