"""The local journal: where a finished call's record goes when Redis cannot take it (embedded
mode, or Redis unreachable), on disk before the call's last byte is sent.

Each process appends to segment files of its own in one directory, one record per line. One
thread writes: it takes every record waiting, writes them together and fsyncs once (group
commit), then releases their callers. A process holds an exclusive `flock` on each of its
segments for as long as it has them, so the segments of a process that died (SIGKILL, out of
memory, a host restart) are the ones nobody holds: any process may adopt them. A segment is
deleted once its records are applied, and rewritten with the rest when only some could be
(compaction)."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

SUFFIX = ".journal"


class Journal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._queue: list[tuple[bytes, Future[None]]] = []
        self._waiting = threading.Condition()
        self._file_lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._held: dict[Path, BinaryIO] = {}
        self._writer: threading.Thread | None = None

    def append(self, payload: bytes) -> Future[None]:
        """Queue one record (a line of JSON); the future is done once it is on disk."""
        done: Future[None] = Future()
        with self._waiting:
            self._ensure_writer()
            self._queue.append((payload, done))
            self._waiting.notify()
        return done

    def rotate(self) -> None:
        """Close the segment being written: the next record starts a new one."""
        with self._file_lock:
            self._file = None

    def ready(self) -> list[Path]:
        """Segments to apply, oldest first: this process's closed ones and those of processes
        that died (adopted: this process holds them from now on)."""
        with self._file_lock:
            writing = self._file
            self._adopt_orphans()
            ready = [path for path, held in self._held.items() if held is not writing]
        return sorted(ready, key=lambda path: path.stat().st_mtime_ns)

    def entries(self, path: Path) -> list[bytes]:
        with path.open("rb") as segment:
            return [line for line in segment.read().split(b"\n") if line.strip()]

    def replace(self, path: Path, remaining: list[bytes]) -> None:
        """Keep only `remaining` of a segment (written aside, synced, then renamed over it)."""
        aside = path.with_suffix(".tmp")
        held = aside.open("wb")
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(b"".join(entry + b"\n" for entry in remaining))
        _sync(held)
        os.replace(aside, path)
        _sync_directory(self.directory)
        with self._file_lock:
            replaced, self._held[path] = self._held[path], held
        replaced.close()

    def discard(self, path: Path) -> None:
        """A segment whose records are all applied."""
        path.unlink(missing_ok=True)
        _sync_directory(self.directory)
        with self._file_lock:
            held = self._held.pop(path, None)
        if held is not None:
            held.close()

    def pending(self) -> int:
        """Records waiting to be written."""
        with self._waiting:
            return len(self._queue)

    def _ensure_writer(self) -> None:
        if self._writer is None or not self._writer.is_alive():
            self._writer = threading.Thread(
                target=self._write_forever, name="momor-journal", daemon=True
            )
            self._writer.start()

    def _write_forever(self) -> None:
        while True:
            with self._waiting:
                while not self._queue:
                    self._waiting.wait()
                batch, self._queue = self._queue, []
            try:
                self._write(b"".join(payload + b"\n" for payload, _ in batch))
            except OSError as exc:
                log.exception("could not write %d records to the journal", len(batch))
                for _, done in batch:
                    done.set_exception(exc)
            else:
                for _, done in batch:
                    done.set_result(None)

    def _write(self, data: bytes) -> None:
        with self._file_lock:
            if self._file is None:
                self._file = self._open_segment()
            self._file.write(data)
            _sync(self._file)

    def _open_segment(self) -> BinaryIO:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{os.getpid()}-{time.time_ns()}{SUFFIX}"
        segment = path.open("ab")
        fcntl.flock(segment, fcntl.LOCK_EX)
        _sync_directory(self.directory)
        self._held[path] = segment
        return segment

    def _adopt_orphans(self) -> None:
        if not self.directory.is_dir():
            return
        for path in self.directory.glob(f"*{SUFFIX}"):
            if path not in self._held and (held := _lock_if_free(path)) is not None:
                log.warning("adopting the journal segment %s of a process that stopped", path.name)
                path.with_suffix(".tmp").unlink(missing_ok=True)
                self._held[path] = held


def _lock_if_free(path: Path) -> BinaryIO | None:
    """The segment, locked, if no live process holds it and it is still the file at `path`."""
    try:
        held = path.open("rb+")
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(held.fileno()).st_ino != path.stat().st_ino:
            raise FileNotFoundError(path)  # replaced or deleted while we locked it
    except (BlockingIOError, FileNotFoundError):
        held.close()
        return None
    return held


def _sync(file: BinaryIO) -> None:
    file.flush()
    os.fsync(file.fileno())


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
