#!/usr/bin/env bash
# Runs Momor on embedded defaults: SQLite, no Redis, records and limits in process. Sets up a
# virtualenv, migrates, loads the default catalog plus a demo offering served by the fake
# upstream (started beside the server), creates a demo organization with credits, an admin
# user and an API key, prints them with a curl line, and serves on 127.0.0.1:8000.
# Run again, it reuses what it made (kept in var/, which git ignores) and keeps what the
# operator changed. scripts/manage.sh runs operator commands against it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

PORT="${MOMOR_PORT:-8000}"
FAKE_PORT="${MOMOR_DEMO_UPSTREAM_PORT:-8765}"
mkdir -p var

ensure_venv fake
ensure_static_assets

if [ ! -f var/quickstart.env ]; then
  log "generating this installation's secrets in var/quickstart.env"
  {
    echo "MOMOR_SECRET_KEY=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    echo "MOMOR_ENCRYPTION_KEY=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))')"
    echo "MOMOR_ADMIN_PASSWORD=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(12))')"
  } > var/quickstart.env
  chmod 600 var/quickstart.env
fi
quickstart_env

manage() { .venv/bin/python manage.py "$@"; }

log "migrating the SQLite database (var/momor.sqlite3)"
manage migrate --no-input -v 0

log "starting the demo upstream on 127.0.0.1:$FAKE_PORT"
.venv/bin/python -m testkit.fake_upstream --port "$FAKE_PORT" > var/fake-upstream.log 2>&1 &
FAKE_PID=$!
trap 'kill "$FAKE_PID" 2>/dev/null || true' EXIT

# --keep-existing: a run after the first adds what the catalogs gained and keeps the rows the
# operator may have edited in the admin.
log "loading the default catalog and the demo offering (rows already there are kept)"
manage load_catalog gateway/catalog/default.toml --keep-existing
sed "s|{FAKE_URL}|http://127.0.0.1:$FAKE_PORT|" scripts/demo-catalog.toml > var/demo-catalog.toml
manage load_catalog var/demo-catalog.toml --keep-existing

if ! manage shell -c "from accounts.models import Organization as O; raise SystemExit(0 if O.objects.filter(slug='demo').exists() else 1)"; then
  log "creating the demo organization with \$100 of credits"
  manage create_org demo --name "Demo" --credits 100
fi
if [ ! -f var/quickstart.key ]; then
  manage create_api_key --org demo --name quickstart > var/quickstart.key
  chmod 600 var/quickstart.key
fi
manage shell -c "
from django.contrib.auth import get_user_model
from accounts.models import Membership, Organization
from gateway.models import Provider
import os
# the demo upstream listens where this run started it
Provider.objects.filter(name='demo').update(base_url='http://127.0.0.1:$FAKE_PORT/v1')
User = get_user_model()
admin = User.objects.filter(username='admin').first() or User.objects.create_superuser('admin', 'admin@localhost', os.environ['MOMOR_ADMIN_PASSWORD'])
Membership.objects.get_or_create(user=admin, organization=Organization.objects.get(slug='demo'), defaults={'role': 'owner'})
"
KEY=$(cat var/quickstart.key)

cat <<INFO

  Momor is starting on http://127.0.0.1:$PORT  (embedded mode: SQLite, no Redis)

  API key:      $KEY
  Sign in:      http://127.0.0.1:$PORT/  and the admin at /admin/
                user admin, password $MOMOR_ADMIN_PASSWORD
  Demo model:   demo/echo, served by the fake upstream (clearly not a real model)

  Try it (streamed):
    curl -N http://127.0.0.1:$PORT/v1/chat/completions \\
      -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \\
      -d '{"model": "demo/echo", "stream": true, "messages": [{"role": "user", "content": "Hello"}]}'

INFO

.venv/bin/uvicorn momor.asgi:application --host 127.0.0.1 --port "$PORT" \
  --loop uvloop --http httptools --ws-max-size 4096
