"""The audit trail: who changed what, from where and when, kept append-only."""
