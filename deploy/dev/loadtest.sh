#!/usr/bin/env bash
# Starts schedbridge on loopback, once on SQLite in a temporary directory and
# once on a PostgreSQL server that this script starts itself (initdb + pg_ctl
# from Debian's postgresql-15, as storage/sqldb/sqltest does, fsync on),
# creates a portfolio and a data key in each, and drives each with
# bin/loadgen from a separate process. Prints each run's summary and the
# PostgreSQL figures as a ratio to the SQLite run of the same invocation.
#
# LOADTEST_DURATION (10s) and LOADTEST_CONCURRENCY (64) change the runs;
# LOADTEST_BACKENDS ("sqlite postgres") picks the backends.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${LOADTEST_DURATION:-10s}
CONC=${LOADTEST_CONCURRENCY:-64}
BACKENDS=${LOADTEST_BACKENDS:-sqlite postgres}
root=$(mktemp -d)
pgbin="" pgdir="" pgdata="" pgurl="" pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$pgdata" ]; then as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$root" $pgdir
}
trap cleanup EXIT

# as_pg runs a PostgreSQL server command; initdb refuses to run as root, so
# root hands it to the postgres system user (make test-deps creates it).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# free_port prints a random loopback port that nothing answers on.
free_port() {
  local p
  while :; do
    p=$(( 20000 + RANDOM % 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}

# start_postgres initialises a cluster in a directory of its own and starts it on a
# loopback port with the buffers and WAL of storage/sqldb/sqltest; fsync and
# synchronous_commit keep their defaults (on). Sets pgurl. It runs in this
# shell, not in a $(...) subshell, so that cleanup sees pgdata and stops it.
start_postgres() {
  # Debian's server binaries live in a versioned directory that is not on
  # PATH; a link on PATH is followed there, since pg_ctl finds postgres
  # beside itself.
  pgbin=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")")
  [ -x "$pgbin/initdb" ] || { echo "loadtest: no initdb; run make test-deps" >&2; exit 1; }
  local port
  # Its own directory, not under $root: the postgres user must reach it.
  pgdir=$(mktemp -d)
  if [ "$(id -u)" = 0 ]; then chown postgres "$pgdir"; fi
  local dir=$pgdir
  pgdata="$dir/data"
  as_pg "$pgbin/initdb" -D "$pgdata" -U app --auth=trust -E UTF8 --no-locale >/dev/null
  port=$(free_port)
  as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$dir/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c shared_buffers=512MB -c max_wal_size=4GB" >/dev/null
  as_pg "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U app loadtest
  pgurl="postgres://app@127.0.0.1:$port/loadtest?sslmode=disable"
}

# run_backend NAME DATABASE_URL: one server, one loadgen run; the loadgen's
# JSON summary goes to $root/NAME.json.
run_backend() {
  local name=$1 url=$2 dir="$root/$1" port
  mkdir -p "$dir"
  port=$(free_port)
  export SCHEDBRIDGE_DATA_DIR="$dir" SCHEDBRIDGE_ADDR="127.0.0.1:$port" SCHEDBRIDGE_LOG_LEVEL=warn
  export SCHEDBRIDGE_DATABASE_URL="$url"
  # The per-key rate limit protects production; the load test measures the
  # server, so it switches the limit off.
  export SCHEDBRIDGE_RATE_LIMIT=0
  ./bin/schedbridge portfolio put load --name "Load test" --control-areas TenneT,50Hertz 2>/dev/null
  SCHEDBRIDGE_LOADGEN_KEY=$(./bin/schedbridge key create --scope data --portfolio load --label loadtest 2>/dev/null)
  export SCHEDBRIDGE_LOADGEN_KEY
  ./bin/schedbridge serve 2>"$dir/server.log" &
  pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  echo "loadgen: POST /v1/forecasts (96 values), $name, $CONC clients, $DUR"
  ./bin/loadgen -url "http://127.0.0.1:$port" -c "$CONC" -d "$DUR" -json >"$root/$name.json"
  ./bin/loadgen -summary "$root/$name.json"
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
}

for b in $BACKENDS; do
  case $b in
    sqlite) run_backend SQLite "sqlite:$root/SQLite/schedbridge.db" ;;
    postgres) start_postgres; run_backend PostgreSQL "$pgurl" ;;
    *) echo "loadtest: unknown backend $b" >&2; exit 2 ;;
  esac
done
if [ -f "$root/SQLite.json" ] && [ -f "$root/PostgreSQL.json" ]; then
  ./bin/loadgen -summary "$root/PostgreSQL.json" -peer "$root/SQLite.json"
fi
