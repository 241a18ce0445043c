"""Embedded mode stores its journal's records on SQLite: a batch goes in a bounded number of
statements, a record SQLite refuses is parked alone with its charge posted, and a batch
delivered again is stored and charged once. In a child process on a SQLite file of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.child_process import ROOT

BUDGET = 30  # statements for 179 records (SQLite takes 999 parameters a statement)

STORE = """
import json
from decimal import Decimal
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from billing.models import Attempt, DailyRollup, DeadLetter, Generation, LedgerEntry
from billing.calls.records import record_payload
from billing.storing.store import records_store
from tests.billing.records import a_record
from tests.conftest import make_key, make_org

orgs = [make_org(f"org{n}", credits=Decimal(10)) for n in range(2)]
keys = [make_key(org)[1].pk for org in orgs]
records = [a_record(orgs[n % 2].pk, api_key_id=keys[n % 2]) for n in range(200)]
records[77] = a_record(orgs[1].pk, latency_ms=-1)
payloads = [record_payload(record) for record in records]
good = payloads[:77] + payloads[78:]

def statements(batch):
    with CaptureQueriesContext(connection) as captured:
        records_store(batch)
    return len(captured.captured_queries)

def exact(org):
    org.refresh_from_db()
    total, running = Decimal(0), True
    for entry in LedgerEntry.objects.filter(organization=org).order_by("id"):
        total += entry.amount
        running = running and entry.balance_after == total
    return running and org.balance == total == Decimal(10) - Decimal("0.00225") * 100

counts = [statements(good[:20]), statements(good[20:])]
records_store(payloads)
records_store(payloads)
matched = Attempt.objects.filter(created_at=F("generation__created_at"))
print(json.dumps({
    "statements": counts,
    "generations": Generation.objects.count(),
    "charges": LedgerEntry.objects.filter(kind="charge").count(),
    "calls": sum(DailyRollup.objects.values_list("calls", flat=True)),
    "attempts": [Attempt.objects.count(), matched.values("generation").distinct().count()],
    "parked": [[d.request_id == records[77].request_id, d.charge_posted, d.error[:15]]
               for d in DeadLetter.objects.all()],
    "exact": [exact(org) for org in orgs],
}))
"""


def test_a_batch_is_stored_together_on_sqlite_and_a_refused_record_parked_alone(
    tmp_path: Path,
) -> None:
    gone = ("REDIS_URL", "MOMOR_CACHE_REDIS_URL", "MOMOR_BROKER_URL")
    env = {name: value for name, value in os.environ.items() if name not in gone}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'momor.sqlite3'}"

    def run(*args: str) -> str:
        done = subprocess.run(  # noqa: S603 - our own manage.py
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("migrate", "-v", "0")
    found: dict[str, Any] = json.loads(run("shell", "-v", "0", "-c", STORE).splitlines()[-1])

    small, large = found["statements"]
    assert small <= large <= BUDGET
    # the parked call is charged and counted as the others are
    assert (found["generations"], found["charges"], found["calls"]) == (199, 200, 200)
    assert found["attempts"] == [199, 199]  # each with its own generation's moment
    assert found["parked"] == [[True, True, "IntegrityError:"]]
    assert found["exact"] == [True, True]
