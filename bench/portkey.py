"""Portkey's open-source gateway as a peer gateway: installed from npm into its own folder under
bench/ (never the project's venv), one Node process, headless, routed to the fake upstream by
the headers of each call (Portkey keeps no model list of its own)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from bench.procs import Proc, Procs, StartError, free_port, wait_http

BENCH = Path(__file__).resolve().parent
PREFIX = BENCH / ".portkey"
PACKAGE = "@portkey-ai/gateway"
VERSION = "1.15.2"
# The gateway accepts any @hono/node-server from 1.3.3 on, but from 1.14.2 on that server gives a
# response built on a fetched one the fetched one's immutable headers, and the gateway then fails
# every streamed call (Portkey-AI/gateway#1389): the newest server that copies them, and the
# @hono/node-ws it accepts (the newer ones require the newer server).
PINS = (f"{PACKAGE}@{VERSION}", "@hono/node-server@1.14.1", "@hono/node-ws@1.2.0")
SCRIPT = PREFIX / "node_modules" / PACKAGE / "build" / "start-server.js"
KEY = "sk-bench-fake"  # Portkey passes the caller's key on to the upstream


def installed(pin: str) -> bool:
    name, _, version = pin.rpartition("@")
    manifest = PREFIX / "node_modules" / name / "package.json"
    return manifest.exists() and json.loads(manifest.read_text())["version"] == version


def ensure_installed() -> Path:
    """bench/.portkey with the pinned packages; installed on first use, again when a pin moves."""
    if all(installed(pin) for pin in PINS):
        return SCRIPT
    npm = shutil.which("npm")
    if npm is None:
        raise StartError("--portkey needs Node.js and npm on PATH")
    print(f"installing {PACKAGE}@{VERSION} into {PREFIX} (once)", flush=True)
    PREFIX.mkdir(exist_ok=True)
    # No install scripts: the package's only one applies patches it does not ship.
    argv = [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--ignore-scripts"]
    subprocess.run([*argv, *PINS], check=True)  # noqa: S603 - npm installing pinned packages
    return SCRIPT


def routing(fake_url: str) -> tuple[tuple[str, str], ...]:
    """The headers that send a call through Portkey's OpenAI provider to the fake upstream."""
    return (("x-portkey-provider", "openai"), ("x-portkey-custom-host", f"{fake_url}/v1"))


def start(procs: Procs, core: int, log_dir: Path) -> tuple[Proc, str]:
    """One Portkey gateway process on `core`; returns it and its base URL."""
    script = ensure_installed()
    node = shutil.which("node")
    if node is None:
        raise StartError("--portkey needs Node.js on PATH")
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "NODE_ENV": "production"}
    # Headless: without its console UI and the log stream behind it; it prints its banner, then
    # errors alone.
    argv = [node, str(script), f"--port={port}", "--headless"]
    proc = procs.start("portkey", argv, core=core, env=env, cwd=log_dir)
    wait_http(proc, f"http://127.0.0.1:{port}/", timeout=60)
    return proc, f"http://127.0.0.1:{port}/v1"
