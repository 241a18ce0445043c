"""The npm clients' scripts in tests/clients/ run as a child process with the Node.js 22 that
ensure_test_clients installs there: each takes its inputs as one JSON argument and prints one
JSON document on stdout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson

CLIENTS = Path(__file__).resolve().parent / "clients"
NODE = CLIENTS / "node_modules" / ".bin" / "node"


def run_script(script: str, inputs: Any) -> Any:
    """What `tests/clients/<script>` printed for `inputs`, read as JSON."""
    assert NODE.exists(), "the test clients are not installed: run scripts/test.sh once"
    done = subprocess.run(  # noqa: S603 - our own script, with arguments written here
        [NODE, CLIENTS / script, orjson.dumps(inputs).decode()],
        cwd=CLIENTS,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)
