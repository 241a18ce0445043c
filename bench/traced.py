"""`python -m bench.traced PROGRAM ARGS...`: run an ASGI server's console script (uvicorn,
daphne, granian) with tracemalloc on; each SIGUSR2 writes a snapshot to
`$BENCH_TRACE_DIR/<pid>-<n>.snap`. Used by `--memory`, never in a measured section
(tracing slows every allocation)."""

from __future__ import annotations

import itertools
import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

FRAMES = 12
_taken = itertools.count(1)


def _snapshot(signum: int, frame: FrameType | None) -> None:
    out = Path(os.environ["BENCH_TRACE_DIR"]) / f"{os.getpid()}-{next(_taken)}.snap"
    tracemalloc.take_snapshot().dump(str(out.with_suffix(".tmp")))
    out.with_suffix(".tmp").rename(out)


def main() -> None:
    program, args = sys.argv[1], sys.argv[2:]
    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR2, _snapshot)
    sys.argv = [program, *args]
    runpy.run_module(Path(program).name.split("-")[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
