"""Reads of an organization's usage: the daily rollups (written as records are stored, rebuilt
by the backfill), the members' pages' reads, the CSV export of generations, keyset pages, and
one generation as its owner reads it."""
