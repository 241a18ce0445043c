#!/usr/bin/env bash
# Runs Momor's gates and whole test suite on PostgreSQL and Redis, setting up what is missing:
# the services (installed with apt if absent, started if stopped), a virtualenv with the
# project and its dev extra, and Debian's Chromium for the browser tests. The gates run
# first, and any one failing fails the run before any test: the import contracts
# (pyproject.toml, [tool.importlinter]), `ruff check`, `ruff format --check`, then mypy strict
# (its Django plugin loads momor.settings, hence after the environment below). Then the
# admission and cluster tests run again on a Redis Cluster of three masters that it starts on
# free loopback ports (scripts/redis_cluster.sh): after the whole suite, or, with
# MOMOR_TEST_REDIS_CLUSTER=1, the same pytest arguments again.
# The suite runs on pytest-xdist, a worker per core (MOMOR_TEST_WORKERS sets how many; 0 runs it
# in pytest's own process), each test file on one worker, each worker on a test database and a
# Redis database of its own (tests/parallel.py); the Redis Cluster pass runs in one process.
# Usage: bash scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_apt_packages postgresql redis-server chromium rabbitmq-server faketime strace
ensure_postgres
ensure_redis
ensure_venv dev
ensure_static_assets
ensure_test_clients

export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/momor}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}"
export MOMOR_SECRET_KEY="test-secret-key-not-for-production"
export MOMOR_ENCRYPTION_KEY="test-encryption-key"
export MOMOR_SECURE_COOKIES=0
export MOMOR_REFRESH_SECONDS=0.2

log "checking the import contracts"
.venv/bin/lint-imports --no-logo
log "checking lint and format (ruff)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
log "checking types (mypy strict)"
.venv/bin/mypy .

CLUSTER_TESTS=(
  tests/billing/admission/test_admission_stores.py tests/billing/admission/test_admission.py
  tests/billing/admission/test_redis_cluster.py tests/billing/admission/test_reservations.py
  tests/billing/storing/test_worker_claims.py
)

# on_redis_cluster [pytest arguments]: the tests again, REDIS_URL naming a cluster of their own
# (the cache, the channel layer and the broker stay on the single Redis).
on_redis_cluster() {
  local url rc=0
  CLUSTER_DIR="$(mktemp -d -t momor-redis-cluster.XXXXXX)"
  trap 'bash scripts/redis_cluster.sh stop "$CLUSTER_DIR"' EXIT
  url="$(bash scripts/redis_cluster.sh start "$CLUSTER_DIR")" || return 1
  log "running ${*:-the admission and cluster tests} on a Redis Cluster ($url)"
  MOMOR_CACHE_REDIS_URL="$REDIS_URL" REDIS_URL="$url" .venv/bin/python -m pytest -n 0 "$@" || rc=$?
  return "$rc"
}

status=0
workers="${MOMOR_TEST_WORKERS:-$(nproc)}"
.venv/bin/python -m pytest -n "$workers" --dist loadfile --durations=25 "$@" || status=$?
if [ $# -eq 0 ]; then
  on_redis_cluster "${CLUSTER_TESTS[@]}" || status=$?
elif [ "${MOMOR_TEST_REDIS_CLUSTER:-0}" = 1 ]; then
  on_redis_cluster "$@" || status=$?
fi
# pytest's 5 means no test ran, which is a failure for a whole-suite run.
exit "$status"
