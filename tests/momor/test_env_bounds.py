"""A number or amount in the environment outside what Momor can work with stops it at start,
with one line naming the variable, rather than running with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check` on the embedded database, with only these settings of Momor's."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOMOR_", "DATABASE_URL", "REDIS_URL"))
    }
    clean |= {"DJANGO_SETTINGS_MODULE": "momor.settings", "MOMOR_SECRET_KEY": "s"}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        ("MOMOR_BYOK_FEE", "-0.05", "MOMOR_BYOK_FEE must be at least 0, not '-0.05'"),
        ("MOMOR_BYOK_FEE", "NaN", "MOMOR_BYOK_FEE must be a finite number, not 'NaN'"),
        ("MOMOR_BYOK_FEE", "Infinity", "MOMOR_BYOK_FEE must be a finite number, not 'Infinity'"),
        ("MOMOR_BYOK_FEE", "5", "MOMOR_BYOK_FEE must be at most 1, not '5'"),
        ("MOMOR_BYOK_FEE", "5%", "MOMOR_BYOK_FEE must be a number, not '5%'"),
        (
            "MOMOR_RESERVE_COMPLETION_TOKENS",
            "-4096",
            "MOMOR_RESERVE_COMPLETION_TOKENS must be at least 1, not '-4096'",
        ),
        (
            "MOMOR_RESERVATION_TTL_SECONDS",
            "0",
            "MOMOR_RESERVATION_TTL_SECONDS must be at least 1, not '0'",
        ),
        ("MOMOR_BODY_TIMEOUT", "nan", "MOMOR_BODY_TIMEOUT must be a finite number, not 'nan'"),
        (
            "MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT",
            "0",
            "MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT must be above 0, not '0'",
        ),
        ("MOMOR_METRICS_PORT", "70000", "MOMOR_METRICS_PORT must be at most 65535, not '70000'"),
        (
            "MOMOR_RECORD_RETENTION_DAYS",
            "-1",
            "MOMOR_RECORD_RETENTION_DAYS must be at least 0, not '-1'",
        ),
    ],
    ids=[
        "fee-negative",
        "fee-nan",
        "fee-infinite",
        "fee-absurd",
        "fee-unreadable",
        "reserve-tokens",
        "reservation-ttl",
        "body-timeout-nan",
        "first-byte-timeout",
        "metrics-port",
        "retention",
    ],
)
def test_it_refuses_to_start_on_a_number_out_of_bounds(name: str, value: str, line: str) -> None:
    done = _check(**{name: value})
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"ImproperlyConfigured: {line}\n")


def test_it_starts_with_a_byok_fee_within_bounds() -> None:
    done = _check(MOMOR_BYOK_FEE="0.05")
    assert done.returncode == 0, done.stderr
