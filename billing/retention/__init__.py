"""Upkeep of the call records: month partitions made ahead, records past the retention dropped,
and what was dropped, for storing and the backfill to know."""
