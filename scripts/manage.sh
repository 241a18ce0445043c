#!/usr/bin/env bash
# Runs an operator command (manage.py) against the installation scripts/quickstart.sh made, in
# the environment it serves in: its secrets (var/quickstart.env), its SQLite database, no
# Redis, the project's .venv. Whatever the calling shell's DATABASE_URL or REDIS_URL say.
#   bash scripts/manage.sh create_org acme --credits 10
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib.sh"

if [ ! -f "$ROOT/var/quickstart.env" ]; then
  echo "no quickstart installation here: run bash scripts/quickstart.sh first" >&2
  exit 1
fi
quickstart_env
exec "$ROOT/.venv/bin/python" "$ROOT/manage.py" "$@"
