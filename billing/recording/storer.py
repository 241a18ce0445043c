"""The storing process of embedded mode, a child of each gateway process
(billing.recording.storer_link): stores each batch of records its gateway sends and answers with
what to announce. Exits when the gateway closes its end, or dies.

    python -m billing.recording.storer FD"""

from __future__ import annotations

import logging
import os
import signal
import sys
from multiprocessing.connection import Connection

import django

log = logging.getLogger("billing.recording.storer")


def main(fd: int) -> None:
    # Ctrl-C reaches the terminal's whole process group: the gateway's shutdown, which still
    # sends its last batch here, decides when this process ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
    django.setup()
    link = Connection(fd)
    while True:
        try:
            batch = link.recv_bytes()
        except EOFError:
            return
        try:
            link.send_bytes(answer(batch))
        except OSError:  # the gateway is gone: the batch stays in its journal
            return


def answer(batch: bytes) -> bytes:
    from django.db import close_old_connections

    from billing.recording.storer_link import answer_encoded
    from billing.storing.dead_letters import TRANSIENT
    from billing.storing.store import records_commit

    close_old_connections()
    try:
        announcement = records_commit(batch.split(b"\n"))
    except TRANSIENT as exc:
        log.warning("database unavailable (%s); the journal keeps its records", type(exc).__name__)
        return answer_encoded(None, f"transient: {type(exc).__name__}")
    except Exception as exc:
        log.exception("could not store %d records", batch.count(b"\n") + 1)
        return answer_encoded(None, type(exc).__name__)
    return answer_encoded(announcement)


if __name__ == "__main__":
    main(int(sys.argv[1]))
