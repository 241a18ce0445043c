"""Operator commands run as a real child process, on the test database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run manage.py in a child process, on the test database."""
    return python("manage.py", *args, **env)


def python(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run Python in a child process from the checkout (`manage.py ...`, `-m bench.seed ...`),
    on the test database."""
    db = connection.settings_dict
    if "postgresql" not in db["ENGINE"]:
        pytest.skip("the child process needs the test database on a server")
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    url = f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"
    return subprocess.run(  # noqa: S603 - our own manage.py, with arguments written here
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
