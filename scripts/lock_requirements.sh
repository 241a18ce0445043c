#!/usr/bin/env bash
# Write requirements.lock: pyproject.toml's runtime dependencies, every one pinned with the
# hashes of its files, at the versions the checkout's .venv (the tests) runs on. Run it after
# changing the dependencies; tests/test_requirements_lock.py fails until it is run.
# Needs uv (https://docs.astral.sh/uv/): pip install uv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tested=$(mktemp)
trap 'rm -f "$tested"' EXIT
.venv/bin/pip freeze --exclude-editable | grep -v '^momor' >"$tested"
{
  echo "# Momor's runtime dependencies, pinned with their hashes (docs/security.md, \"Deployment hardening\"):"
  echo "#   pip install --require-hashes -r requirements.lock && pip install --no-deps ."
  echo "# Made by scripts/lock_requirements.sh from pyproject.toml; do not edit."
  uv pip compile pyproject.toml --python-version 3.11 --python-platform linux \
    --generate-hashes --no-header --quiet -c "$tested"
} >requirements.lock.new
mv requirements.lock.new requirements.lock
