#!/usr/bin/env bash
# The benchmark from a fresh clone: PostgreSQL and Redis running (installed with apt if
# absent), the project's .venv, then `python -m bench.run` with the arguments given.
# LiteLLM (--litellm) and py-spy (--profile) go into their own venvs under bench/, never .venv.
# Usage: bash bench/run.sh [--litellm] [--soak 600] [--repeat 3] [--profile] ...
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_apt_packages postgresql redis-server util-linux
ensure_postgres
ensure_redis
ensure_venv fake
exec .venv/bin/python -m bench.run "$@"
