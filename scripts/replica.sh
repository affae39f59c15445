#!/usr/bin/env bash
# A hot standby of this host's PostgreSQL, streaming from it, for agents' retrieval reads
# (curation/infra/db_router.py). Debian's cluster tools, run as root:
#
#   bash scripts/replica.sh up     create the standby (a fresh pg_basebackup) and start it; prints its URL
#   bash scripts/replica.sh down   stop it, drop it and its replication slot on the primary
#   bash scripts/replica.sh lag    the standby's replay lag behind the primary, in bytes
#   bash scripts/replica.sh stop|start   stop the standby's server, or start it again (it catches up)
#
# `up` prints DATABASE_REPLICA_URL for the database of DATABASE_URL (the standby holds every database of
# the primary). Exit 3 when the cluster tools are not installed. On the primary it changes only what
# streaming needs and a reload applies: a `host replication all 127.0.0.1/32 trust` line in pg_hba.conf
# when there is none. wal_level and max_wal_senders need a restart, so they are checked, not changed.
set -euo pipefail

HOST=127.0.0.1
PRIMARY_PORT="${REPLICA_PRIMARY_PORT:-5432}"
PORT="${REPLICA_PORT:-5439}"
NAME="${REPLICA_CLUSTER:-memoryadmin_replica}"
SLOT="${NAME}"
DB_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:${PRIMARY_PORT}/memoryadmin}"

missing=()
for tool in pg_createcluster pg_ctlcluster pg_dropcluster pg_lsclusters pg_basebackup psql runuser; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "replica: PostgreSQL's cluster tools are not installed (missing: ${missing[*]})" >&2
  exit 3
fi
VERSION="${REPLICA_PG_VERSION:-$(ls /etc/postgresql | sort -V | tail -1)}"

primary() { psql -h "$HOST" -p "$PRIMARY_PORT" -U postgres -d postgres -Atqc "$1"; }
standby() { psql -h "$HOST" -p "$PORT" -U postgres -d postgres -Atqc "$1"; }
exists() { pg_lsclusters -h | awk -v v="$VERSION" -v n="$NAME" '$1 == v && $2 == n {found=1} END {exit !found}'; }

drop() {
  if exists; then
    pg_dropcluster --stop "$VERSION" "$NAME"
  fi
  for _ in $(seq 40); do  # the primary's walsender lets go of the slot once it sees the standby gone
    [ -z "$(primary "SELECT 1 FROM pg_replication_slots WHERE slot_name = '$SLOT' AND active")" ] && break
    sleep 0.25
  done
  primary "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$SLOT' AND NOT active" >/dev/null
}

check_primary() {
  pg_isready -q -h "$HOST" -p "$PRIMARY_PORT" || { echo "replica: the primary at $HOST:$PRIMARY_PORT is not running" >&2; exit 1; }
  local wal_level senders
  wal_level="$(primary "SHOW wal_level")"
  senders="$(primary "SHOW max_wal_senders")"
  if [ "$wal_level" = minimal ] || [ "$senders" -lt 2 ]; then
    echo "replica: the primary has wal_level=$wal_level and max_wal_senders=$senders; streaming needs" \
      "wal_level=replica and max_wal_senders>=2, which take a restart of the primary" >&2
    exit 1
  fi
  local hba
  hba="$(primary "SHOW hba_file")"
  if ! primary "SELECT 1 FROM pg_hba_file_rules WHERE 'replication' = ANY(database) AND address = '$HOST' AND auth_method = 'trust'" | grep -q 1; then
    printf '\n# memoryadmin: the local hot standby streams from here (scripts/replica.sh)\nhost replication all %s/32 trust\n' "$HOST" >>"$hba"
    primary "SELECT pg_reload_conf()" >/dev/null
    echo "replica: added 'host replication all $HOST/32 trust' to $hba and reloaded the primary" >&2
  fi
}

up() {
  check_primary
  if exists && standby "SELECT pg_is_in_recovery()" 2>/dev/null | grep -q t && [ "$(streaming)" = streaming ]; then
    url
    return
  fi
  drop  # a stopped or broken one is made again: its WAL may be gone from the primary
  pg_createcluster --start-conf=manual -p "$PORT" "$VERSION" "$NAME" >/dev/null
  local data conf
  data="$(pg_lsclusters -h | awk -v v="$VERSION" -v n="$NAME" '$1 == v && $2 == n {print $6}')"
  conf="/etc/postgresql/$VERSION/$NAME"
  find "$data" -mindepth 1 -delete
  # -R writes standby.signal and primary_conninfo; -C -S keeps the WAL the standby has not replayed yet.
  runuser -u postgres -- pg_basebackup -h "$HOST" -p "$PRIMARY_PORT" -U postgres -D "$data" \
    -R -X stream -C -S "$SLOT" -c fast --no-sync
  # A hot standby must allow at least what the primary does.
  {
    echo "# scripts/replica.sh: a hot standby of $HOST:$PRIMARY_PORT"
    echo "listen_addresses = '$HOST'"
    echo "port = $PORT"
    echo "hot_standby = on"
    echo "hot_standby_feedback = on"
    for setting in max_connections max_worker_processes max_prepared_transactions max_locks_per_transaction max_wal_senders; do
      echo "$setting = $(primary "SHOW $setting")"
    done
  } >"$conf/conf.d/90-memoryadmin-replica.conf"
  printf 'local all all trust\nhost all all %s/32 trust\n' "$HOST" >"$conf/pg_hba.conf"
  pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" start
  for _ in $(seq 60); do
    standby "SELECT pg_is_in_recovery()" 2>/dev/null | grep -q t && break
    sleep 0.5
  done
  standby "SELECT pg_is_in_recovery()" | grep -q t || { echo "replica: the standby did not start" >&2; exit 1; }
  for _ in $(seq 120); do  # up once it streams: it has caught up with the primary's WAL at least once
    [ "$(streaming)" = streaming ] && break
    sleep 0.5
  done
  [ "$(streaming)" = streaming ] || { echo "replica: the standby does not stream from the primary" >&2; exit 1; }
  url
}

url() {
  # The primary's URL with the standby's port (user, password and database kept).
  python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); h = p.netloc.rsplit("@", 1); \
host = (h[1] if len(h) == 2 else h[0]).rsplit(":", 1)[0]; \
print(u.urlunsplit(p._replace(netloc=(h[0] + "@" if len(h) == 2 else "") + host + ":" + sys.argv[2])))' "$DB_URL" "$PORT"
}

streaming() {
  primary "SELECT r.state FROM pg_stat_replication r JOIN pg_replication_slots s ON s.active_pid = r.pid
    WHERE s.slot_name = '$SLOT'"
}

lag() {
  primary "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), r.replay_lsn) FROM pg_stat_replication r
    JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = '$SLOT'"
}

case "${1:-}" in
  up) up ;;
  down) drop ;;
  url) url ;;
  lag) lag ;;
  stop) pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" stop -m fast ;;
  start)
    pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$NAME" start
    for _ in $(seq 60); do pg_isready -q -h "$HOST" -p "$PORT" && break; sleep 0.5; done
    ;;
  *) echo "usage: scripts/replica.sh up|down|url|lag|stop|start" >&2; exit 2 ;;
esac
