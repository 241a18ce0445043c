"""The journal on disk: a live process keeps its segments (another never applies them under
it), a dead one's are adopted and applied, a line torn by a crash is parked without holding
back the others, and records appended together all land in the segment."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import orjson
import pytest

from billing.calls.records import record_payload
from billing.models import DailyRollup, DeadLetter, Generation
from billing.recording.hand_off import drain
from billing.recording.journal import Journal
from billing.recording.replay import REPLAYER
from tests.billing.records import a_record, an_embeddings_record
from tests.conftest import make_org
from tests.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def record_line(org_id: int) -> bytes:
    return orjson.dumps(a_record(org_id))


HOLDER = """
import sys, time
from pathlib import Path
from billing.recording.journal import Journal
journal = Journal(Path(sys.argv[1]))
journal.append(sys.argv[2].encode()).result()
print("written", flush=True)
time.sleep(120)
"""


def test_a_live_process_keeps_its_journal_and_a_dead_ones_is_adopted(
    tmp_path: Path, settings: Any
) -> None:
    org = make_org("journaled")
    line = record_line(org.pk)
    holder = subprocess.Popen(  # noqa: S603 - a script written here
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(tmp_path), line.decode()],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "written\n"
        settings.MOMOR_JOURNAL_DIR = tmp_path
        assert REPLAYER.replay() is True  # nothing of its own; the holder's is not adopted
        assert len(list(tmp_path.glob("*.journal"))) == 1
        holder.kill()
        holder.wait(10)
        assert REPLAYER.replay() is True  # adopted, applied, deleted
    finally:
        holder.kill()
    assert drain()
    assert Generation.objects.filter(request_id=orjson.loads(line)["request_id"]).exists()
    assert list(tmp_path.glob("*.journal")) == []


def test_a_line_torn_by_a_crash_is_parked_and_the_others_are_stored(
    tmp_path: Path, settings: Any
) -> None:
    org = make_org("torn")
    good = [record_line(org.pk) for _ in range(2)]
    (tmp_path / "12345-1.journal").write_bytes(b"\n".join(good) + b"\n" + good[0][:40])
    settings.MOMOR_JOURNAL_DIR = tmp_path

    assert REPLAYER.replay() is True
    assert drain()

    ids = [orjson.loads(line)["request_id"] for line in good]
    assert Generation.objects.filter(request_id__in=ids).count() == 2
    letter = DeadLetter.objects.get()
    assert letter.payload == good[0][:40].decode()
    assert letter.request_id == "" and letter.charge_posted is False


def test_a_record_journaled_before_the_api_was_kept_is_replayed_as_chat(
    tmp_path: Path, settings: Any
) -> None:
    """A journal a process left before the API was kept, applied by this one beside a record
    of another API: each stored, and counted in the daily usage, under its own."""
    org = make_org("older")
    older = orjson.loads(record_line(org.pk))
    del older["api"]
    embedded = an_embeddings_record(org.pk)
    lines = [orjson.dumps(older), record_payload(embedded)]
    (tmp_path / "12345-1.journal").write_bytes(b"\n".join(lines) + b"\n")
    settings.MOMOR_JOURNAL_DIR = tmp_path

    assert REPLAYER.replay() is True
    assert drain()

    stored = Generation.objects.filter(request_id__in=[older["request_id"], embedded.request_id])
    assert dict(stored.values_list("request_id", "api")) == {
        older["request_id"]: "chat",
        embedded.request_id: "embeddings",
    }
    usage = DailyRollup.objects.filter(organization=org).order_by("api")
    assert list(usage.values_list("api", "model", "calls")) == [
        ("chat", "openai/gpt-5", 1),
        ("embeddings", "openai/text-embedding-3-small", 1),
    ]


def test_records_appended_together_all_land_in_the_segment(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    lines = [f'{{"n": {i}}}'.encode() for i in range(200)]

    started = time.monotonic()
    done, pending = wait([journal.append(line) for line in lines], timeout=30)

    assert not pending and all(future.exception() is None for future in done)
    assert time.monotonic() - started < 30
    [segment] = tmp_path.glob("*.journal")
    assert sorted(journal.entries(segment)) == sorted(lines)
