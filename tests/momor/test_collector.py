"""A server process loads the app with the cycle collector tuned: what the app built at start
is frozen out of the collector's passes, and the young generation runs rarely."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from momor.collector import YOUNG_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import gc, json, momor.asgi; "
    "print(json.dumps([gc.get_threshold()[0], gc.get_freeze_count(), len(gc.get_objects())]))"
)


def test_loading_the_app_freezes_what_it_built_and_raises_the_young_threshold() -> None:
    done = subprocess.run(  # noqa: S603 - our own probe
        [sys.executable, "-c", PROBE], cwd=ROOT, env=dict(os.environ),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    threshold, frozen, scanned = json.loads(done.stdout.strip().splitlines()[-1])
    assert threshold == YOUNG_THRESHOLD
    assert frozen > 50_000  # Django, the apps and their imports
    assert scanned < frozen / 10
