"""The gateway's end of its storing process (embedded mode, MOMOR_JOURNAL_STORER=process): the
journal's replay sends each batch of records to `python -m billing.recording.storer`, a child of
this process, and waits for its answer; the database work (Django building and running the
inserts) holds the child's interpreter, never the one that serves calls. The child is started
with the replay and started again whenever it is gone; it exits when this process closes its
end (or dies). A batch the child did not answer for stays in the journal and is sent again:
storing is idempotent on the request id.

One message each way over a socket pair: the records, one per line (a journal's lines hold no
newline); the answer, JSON: what to announce, or why nothing was stored."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from socket import socketpair

import orjson
from django.conf import settings

from billing.storing.store import Announcement

log = logging.getLogger(__name__)

ANSWER_SECONDS = 300.0
"""A batch the child has not answered for this long: the child is stopped and started again."""
STOP_SECONDS = 5.0


class StorerUnavailable(Exception):
    """The batch was not stored: the child is gone or restarting, or its database is down."""


class StorerFailed(Exception):
    """The child could not store the batch for a reason of its own (logged there)."""


class StorerLink:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._link: Connection | None = None

    def start(self) -> None:
        with self._lock:
            self._ensure()

    def commit(self, payloads: Sequence[bytes]) -> Announcement:
        """Have the child store the batch; returns what to announce here once it has."""
        with self._lock:
            link = self._ensure()
            try:
                link.send_bytes(b"\n".join(payloads))
                answer = self._answer(link)
            except (OSError, EOFError, TimeoutError) as exc:
                self._stop()
                raise StorerUnavailable(f"the storing process stopped ({exc!r})") from exc
        return answer_decoded(answer)

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _ensure(self) -> Connection:
        if self._link is not None and self._process is not None and self._process.poll() is None:
            return self._link
        self._stop()
        mine, theirs = socketpair()
        with mine, theirs:
            command = [sys.executable, "-m", "billing.recording.storer", str(theirs.fileno())]
            self._process = subprocess.Popen(  # noqa: S603 - this interpreter running our module
                command, cwd=settings.BASE_DIR, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL
            )
            self._link = Connection(mine.detach())
        log.info("storing process %d started", self._process.pid)
        return self._link

    def _answer(self, link: Connection) -> bytes:
        deadline = time.monotonic() + ANSWER_SECONDS
        while not link.poll(1.0):
            process = self._process
            if process is None or process.poll() is not None:
                raise EOFError("the storing process exited")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer in {ANSWER_SECONDS:.0f} s")
        return link.recv_bytes()

    def _stop(self) -> None:
        link, process, self._link, self._process = self._link, self._process, None, None
        if link is not None:
            link.close()  # the child reads the end of its input, and exits
        if process is None:
            return
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def answer_encoded(announcement: Announcement | None, problem: str = "") -> bytes:
    """The child's answer: the announcement of a stored batch, or the kind of failure
    (`transient`: the database is down; anything else: a fault of the child's)."""
    if announcement is None:
        return orjson.dumps({"problem": problem})
    return orjson.dumps({"posted": announcement.posted, "messages": announcement.messages})


def answer_decoded(answer: bytes) -> Announcement:
    decoded = orjson.loads(answer)
    if "problem" in decoded:
        problem = decoded["problem"]
        raise (StorerUnavailable if problem.startswith("transient") else StorerFailed)(problem)
    posted = [(org, rid, entry, balance) for org, rid, entry, balance in decoded["posted"]]
    messages = [(group, message) for group, message in decoded["messages"]]
    return Announcement(posted, messages)


STORER = StorerLink()
