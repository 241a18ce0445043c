"""Billing's pages of the members' UI: the overview, generations (list, detail, CSV export),
usage and the ledger. Each view is thin (parse, one read, render)."""
