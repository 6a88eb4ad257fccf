#!/usr/bin/env bash
# bench-compare.sh BASE: builds the jobs package's chain benchmark at the
# commit BASE and from the work tree, runs the two alternately (RUNS each,
# the order swapped every pair so that neither always runs on a warmer
# machine) at SCHEDBRIDGE_BENCH_LOCATIONS market locations, and prints every
# metric's median for both and their ratio (work tree / base) with
# benchstat. Wall times, peak RSS and the ratios to DuckDB measured in the
# same run are all metrics of BenchmarkChain, so each stage's ratio is one
# line: benchstat's "vs base" column is head/base - 1 (-20% is a ratio of
# 0.80). With alpha 1 it prints the change even where 3 runs cannot make it
# significant; its p-value says how far to trust it. The raw outputs stay in
# OUT for a second look.
#
# Usage: make bench-compare BASE=13683c2 [RUNS=3] [LOCATIONS=200000]
set -euo pipefail

base="${1:?usage: bench-compare.sh BASE (a commit, tag or branch)}"
runs="${RUNS:-3}"
out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")}"
bench="${BENCH:-BenchmarkChain}"
pkg="${PKG:-./jobs}"
export SCHEDBRIDGE_BENCH_LOCATIONS="${SCHEDBRIDGE_BENCH_LOCATIONS:-200000}"

root="$(git rev-parse --show-toplevel)"
rev="$(git rev-parse --verify "$base^{commit}")"
tools="${SCHEDBRIDGE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schedbridge/bin}"
benchstat="$tools/benchstat-v0.0.0-20260908200009-22c9c6c9d4da/benchstat"
if [ ! -x "$benchstat" ]; then
  echo "bench-compare: building benchstat into $(dirname "$benchstat")" >&2
  GOBIN="$(dirname "$benchstat")" go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
fi

wt="$out/base-tree"
cleanup() { git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || true; }
trap cleanup EXIT
git -C "$root" worktree add --detach --force "$wt" "$rev" >/dev/null
echo "bench-compare: building $pkg at $base ($rev) and from the work tree" >&2
(cd "$wt" && go test -c -o "$out/base.test" "$pkg")
(cd "$root" && go test -c -o "$out/head.test" "$pkg")
cleanup

# Each run starts in the package's directory, as `go test` would, so that
# the tests' relative paths (testdata, ../shared) resolve.
# PROFILE=1 keeps a CPU profile of every run (OUT/base-1.pprof, ...); the
# runner labels its samples by stage and phase (go tool pprof -tagfocus).
run() { # which i
  local prof=()
  [ -n "${PROFILE:-}" ] && prof=(-test.cpuprofile "$out/$1-$2.pprof")
  (cd "$root/$pkg" && "$out/$1.test" -test.run '^$' -test.bench "^$bench\$" -test.benchtime 1x \
    -test.benchmem -test.timeout 120m "${prof[@]}") >>"$out/$1.txt" 2>>"$out/$1.log"
}
: >"$out/base.txt"
: >"$out/head.txt"
for i in $(seq 1 "$runs"); do
  if [ $((i % 2)) = 1 ]; then order="base head"; else order="head base"; fi
  for which in $order; do
    echo "bench-compare: run $i of $runs: $which ($SCHEDBRIDGE_BENCH_LOCATIONS locations)" >&2
    run "$which" "$i"
  done
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores); base $base ($rev); $runs runs each; outputs in $out"
"$benchstat" -alpha 1 base="$out/base.txt" head="$out/head.txt" >"$out/benchstat.txt" 2>/dev/null
# One line per metric from benchstat's CSV: the two medians and their ratio.
"$benchstat" -alpha 1 -format csv base="$out/base.txt" head="$out/head.txt" 2>/dev/null | awk -F, '
  # Each metric has two header lines: the sides present (",base,,head,,,",
  # or one side only) and the metric ("sec/op,CI,sec/op,CI,vs base,P").
  $1 == "" && $3 != "CI" { side = $2; next }
  $1 == "" && $3 == "CI" { metric = $2; both = ($4 != ""); next }
  $1 != "" && $1 != "geomean" && metric != "" {
    if (both) {
      ratio = ($2 + 0 != 0) ? sprintf("%.3f", $4 / $2) : "-"
      printf "%-34s %14.6g %14.6g %9s   %s\n", metric, $2, $4, ratio, $7
    } else if (side == "head") {
      printf "%-34s %14s %14.6g %9s   (head only)\n", metric, "-", $2, "-"
    } else {
      printf "%-34s %14.6g %14s %9s   (base only)\n", metric, $2, "-", "-"
    }
  }
  BEGIN { printf "%-34s %14s %14s %8s   %s\n", "metric (median)", "base", "head", "head/base", "p" }'
echo "(benchstat's full tables: $out/benchstat.txt)"
