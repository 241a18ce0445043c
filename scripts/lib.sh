# Shared set-up steps for scripts/quickstart.sh and scripts/test.sh (sourced, not run).

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
ensure_apt_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]} with apt"
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_postgres() {
  if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then return 0; fi
  log "starting PostgreSQL"
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  pg_isready -h 127.0.0.1 -p 5432 -q || { echo "PostgreSQL did not start" >&2; exit 1; }
  # Local trust for the test role, as a fresh Debian cluster has only peer auth.
  if ! psql -h 127.0.0.1 -U postgres -c 'select 1' >/dev/null 2>&1; then
    local hba
    hba=$(as_root su postgres -c "psql -tAc 'show hba_file'")
    as_root sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
    as_root su postgres -c "psql -c 'select pg_reload_conf()'" >/dev/null
  fi
}

ensure_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return 0; fi
  log "starting Redis"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
    --appendonly no --dir /var/lib/redis --logfile /var/log/redis/momor.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
}

# ensure_venv [extra]: a .venv with the project installed (editable), reinstalled when
# pyproject.toml changes.
ensure_venv() {
  local extra="${1:-}" spec="." stamp
  [ -n "$extra" ] && spec=".[$extra]"
  python3 -c 'import venv' 2>/dev/null || ensure_apt_packages python3-venv
  [ -x .venv/bin/python ] || { log "creating .venv"; python3 -m venv .venv; }
  stamp=".venv/.momor-installed-${extra:-base}"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    log "installing Momor ${extra:+with [$extra] }into .venv"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e "$spec"
    touch "$stamp"
  fi
}

# ensure_static_assets: the members' UI's browser libraries (htmx, Chart.js) and the management
# API's docs page (swagger-ui-dist), installed from the npm registry as package-lock.json pins
# them (no install scripts: swagger-ui-dist's would report the install) and copied into
# static/vendor/.
ensure_static_assets() {
  local vendor=static/vendor stamp=node_modules/.momor-installed
  command -v npm >/dev/null 2>&1 || ensure_apt_packages npm
  if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    log "installing the UI's browser libraries with npm"
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
    touch "$stamp"
  fi
  mkdir -p "$vendor"
  cp node_modules/htmx.org/dist/htmx.min.js "$vendor/htmx.min.js"
  cp node_modules/chart.js/dist/chart.umd.min.js "$vendor/chart.umd.min.js"
  mkdir -p "$vendor/swagger-ui"
  local file
  for file in swagger-ui.css swagger-ui-bundle.js swagger-ui-standalone-preset.js favicon-32x32.png; do
    cp "node_modules/swagger-ui-dist/$file" "$vendor/swagger-ui/$file"
  done
}

# ensure_test_clients: the real clients and peers the tests run against the gateway (Claude
# Code, Codex CLI, Anthropic's TypeScript SDK, the Vercel AI SDK, the OpenID Connect provider
# the sign-in tests sign in on, and the Node.js 22 they need), installed
# from the npm registry as tests/clients/package-lock.json pins them, into
# tests/clients/node_modules (the tests find them there). Install scripts run here: Node.js's
# and Claude Code's pick their platform's binary.
ensure_test_clients() {
  local stamp=tests/clients/node_modules/.momor-installed
  command -v npm >/dev/null 2>&1 || ensure_apt_packages npm
  if [ ! -f "$stamp" ] || [ tests/clients/package-lock.json -nt "$stamp" ]; then
    log "installing the test clients (Claude Code, Codex CLI, SDKs) with npm"
    (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
}

# quickstart_env: the environment scripts/quickstart.sh runs Momor in, for it and for
# scripts/manage.sh alike: this installation's secrets (var/quickstart.env), the SQLite
# database in var/, no Redis, and the demo upstream's key.
quickstart_env() {
  local env_file
  env_file="$(dirname "${BASH_SOURCE[0]}")/../var/quickstart.env"
  set -a
  # shellcheck source=/dev/null
  source "$env_file"
  set +a
  export MOMOR_SECURE_COOKIES=0
  export MOMOR_PROVIDER_KEY_DEMO=demo-upstream-key
  # on one machine, a webhook receiver beside it is the usual one (docs/alerts.md)
  export MOMOR_OUTBOUND_ALLOW="${MOMOR_OUTBOUND_ALLOW-127.0.0.0/8,::1/128}"
  unset DATABASE_URL REDIS_URL MOMOR_CACHE_REDIS_URL MOMOR_BROKER_URL
}
