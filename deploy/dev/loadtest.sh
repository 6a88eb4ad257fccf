#!/usr/bin/env bash
# Starts schedbridge on SQLite in a temporary directory on loopback, creates a
# portfolio and a data key, and drives it with bin/loadgen from a separate
# process. Prints the load generator's summary.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${LOADTEST_DURATION:-10s}
CONC=${LOADTEST_CONCURRENCY:-16}
dir=$(mktemp -d)
port=$(( 20000 + RANDOM % 20000 ))
export SCHEDBRIDGE_DATA_DIR="$dir" SCHEDBRIDGE_ADDR="127.0.0.1:$port" SCHEDBRIDGE_LOG_LEVEL=warn
# The per-key rate limit protects production; the load test measures the
# server, so it switches the limit off.
export SCHEDBRIDGE_RATE_LIMIT=0
./bin/schedbridge portfolio put load --name "Load test" --control-areas TenneT,50Hertz 2>/dev/null
SCHEDBRIDGE_LOADGEN_KEY=$(./bin/schedbridge key create --scope data --portfolio load --label loadtest 2>/dev/null)
export SCHEDBRIDGE_LOADGEN_KEY
./bin/schedbridge serve 2>"$dir/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
echo "loadgen: POST /v1/forecasts (96 values), SQLite, $CONC clients, $DUR"
./bin/loadgen -url "http://127.0.0.1:$port" -c "$CONC" -d "$DUR"
