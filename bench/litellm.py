"""LiteLLM proxy as a peer gateway: its own venv under bench/ (never the project's), a config
with one model routed to the fake upstream, one worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.deploy import MODEL, UPSTREAM_ID
from bench.procs import Proc, Procs, free_port, wait_http

BENCH = Path(__file__).resolve().parent
VENV = BENCH / ".venv-litellm"
# 1.108.0: the release line the issue quotes, and the newest 1.108 whose proxy extras install.
VERSION = "1.108.0"
MASTER_KEY = "sk-bench-litellm-master"

CONFIG = f"""model_list:
  - model_name: {MODEL}
    litellm_params:
      model: openai/{UPSTREAM_ID}
      api_base: {{api_base}}
      api_key: sk-bench-fake
general_settings:
  master_key: {MASTER_KEY}
litellm_settings:
  telemetry: false
"""


def ensure_venv() -> Path:
    """bench/.venv-litellm with litellm[proxy] pinned; created on first use."""
    binary = VENV / "bin" / "litellm"
    if binary.exists():
        return binary
    print(f"installing litellm[proxy]=={VERSION} into {VENV} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)  # noqa: S603 - our interpreter and pip installing a pinned package
    pip = [str(VENV / "bin" / "pip"), "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)  # noqa: S603 - our interpreter and pip installing a pinned package
    subprocess.run([*pip, f"litellm[proxy]=={VERSION}"], check=True)  # noqa: S603 - our interpreter and pip installing a pinned package
    return binary


def start(procs: Procs, fake_url: str, core: int, log_dir: Path) -> tuple[Proc, str]:
    """One LiteLLM proxy worker on `core`; returns it and its base URL."""
    binary = ensure_venv()
    config = log_dir / "litellm.yaml"
    config.write_text(CONFIG.format(api_base=f"{fake_url}/v1"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS"))}
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # no fetch of the price map at start
        LITELLM_LOG="ERROR",
        DISABLE_ADMIN_UI="True",
        PYTHONUNBUFFERED="1",
    )
    argv = [str(binary), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--num_workers", "1", "--telemetry", "False"]
    proc = procs.start("litellm", argv, core=core, env=env, cwd=log_dir)
    wait_http(proc, f"http://127.0.0.1:{port}/health/liveliness", timeout=180)
    return proc, f"http://127.0.0.1:{port}/v1"
