"""Rate limits count a key's calls in fixed one-minute windows (the wall clock's minutes)."""

import time


def fresh_rate_window(margin: float = 10.0) -> None:
    """Start a rate-limited sequence early enough in the minute that it stays in one window."""
    into = time.time() % 60
    if into > 60 - margin:
        time.sleep(60 - into + 0.05)
