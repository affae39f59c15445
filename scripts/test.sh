#!/usr/bin/env bash
# The suite on SQLite (the embedded default), then on PostgreSQL with the real Redis when they are
# reachable. Under CI=true both runs are required: an unreachable PostgreSQL or Redis fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
which="${1:-all}"
PG_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/memoryadmin}"
# Not db 0, an install's (docker-compose.yml): the run's queues are its own anyway (tests/redis_prefix.py).
BROKER_URL="${CELERY_BROKER_URL:-redis://127.0.0.1:6379/1}"
shift || true

run_sqlite() {
  echo "== suite on SQLite (embedded default)"
  local data; data="$(mktemp -d)"
  env -u DATABASE_URL -u CELERY_BROKER_URL MEMORYADMIN_DATA_DIR="$data" "$BIN/pytest" -q "$@"
}

services_up() {
  DATABASE_URL="$PG_URL" CELERY_BROKER_URL="$BROKER_URL" "$BIN/python" scripts/check_services.py
}

run_postgres() {
  echo "== suite on PostgreSQL ($PG_URL) with Redis ($BROKER_URL)"
  local data; data="$(mktemp -d)"
  DATABASE_URL="$PG_URL" CELERY_BROKER_URL="$BROKER_URL" MEMORYADMIN_DATA_DIR="$data" \
    MEMORYADMIN_REQUIRE_POSTGRES=1 "$BIN/pytest" -q "$@"
}

case "$which" in
  sqlite) run_sqlite "$@" ;;
  postgres) run_postgres "$@" ;;
  all)
    run_sqlite "$@"
    if services_up; then
      run_postgres "$@"
    elif [ "${CI:-}" = "true" ]; then
      echo "CI=true: PostgreSQL and Redis are required for the second run, and are not reachable" >&2
      exit 1
    else
      echo "== PostgreSQL or Redis not reachable: skipped the PostgreSQL run (CI=true makes it required)"
    fi
    ;;
  *) echo "usage: scripts/test.sh [all|sqlite|postgres] [pytest args]" >&2; exit 2 ;;
esac
