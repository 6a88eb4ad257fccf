# The two set-up commands are `make run` and `make test` (see README).
GO      ?= go
BIN     := bin
export CGO_ENABLED ?= 0

.PHONY: all build image run demo test test-race test-deps tidy-check bench bench-go bench-inbox bench-chain bench-compare bench-mako bench-console loadtest vet fmt clean screenshots docs-bundle

all: build

build:
	$(GO) build -o $(BIN)/schedbridge ./cmd/schedbridge
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen

# The container image (Containerfile, docs/operations.md): the static binary,
# stripped and without local paths, on an empty base; built with buildah,
# which needs no daemon and no base image. IMAGE=name:tag picks the name.
IMAGE ?= localhost/schedbridge:$(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/image/schedbridge ./cmd/schedbridge
	./deploy/image/build.sh $(BIN)/image/schedbridge $(IMAGE)

# Serves on the embedded default: SQLite and files under ./var.
run: build
	./$(BIN)/schedbridge serve

# A demo portfolio on the embedded default, the chain for tomorrow, and
# where to look.
demo: build
	./$(BIN)/schedbridge demo

test-deps:
	./deploy/dev/test-deps.sh

# The whole suite, including the contract tests against a real PostgreSQL
# server that the tests start on loopback, then the race detector's run.
test: test-deps tidy-check
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...
	$(MAKE) test-race

# The packages whose code runs goroutines of its own (group commit, the
# scheduler and the runner's heartbeat, the parallel Parquet encoder and the
# catalog, the inbox's overlapped staging, the bulk read-ahead and hashing, the IMAP client,
# the API's and the portal's fan-outs), under the race detector, on SQLite
# and PostgreSQL as their suites run. The detector needs cgo (gcc) and turns
# on checkptr, which the pure-Go SQLite passes. cmd/schedbridge is left out:
# its tests drive a binary built without the detector.
RACE_PKGS := ./api/... ./ingest/bulk/ ./ingest/inbox/ ./ingest/mail/... ./jobs/ ./storage/...

test-race: test-deps
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 25m $(RACE_PKGS)

vet:
	$(GO) vet ./...

# Fails when `go mod tidy` would change go.mod or go.sum, and shows how.
tidy-check:
	$(GO) mod tidy -diff

fmt:
	gofmt -w $$(git ls-files '*.go')

# Go benchmarks, then the load generator against a real server process.
bench: test-deps bench-go bench-chain bench-mako bench-console loadtest

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5x -skip 'BenchmarkChain|BenchmarkMakoViews|BenchmarkConsoleSummary' ./...

# The issue's bulk benchmark: a 1,000,000-row x 96 metered-data CSV through
# MinIO into SQLite and into PostgreSQL (wall time, values/s, peak RSS).
bench-inbox: test-deps
	SCHEDBRIDGE_BENCH_INBOX_ROWS=1000000 $(GO) test -run '^$$' -bench InboxMeteredCSV -benchtime 1x -timeout 60m ./ingest/inbox/

# The issue's chain benchmark: 1,000,000 market locations (95% slp, 5% rlm
# with 8 weeks of history) on SQLite + the local store, the whole chain for
# one day, per-stage times, peak RSS and DuckDB's time for the same aggregation.
bench-chain: test-deps
	SCHEDBRIDGE_BENCH_LOCATIONS=1000000 $(GO) test -run '^$$' -bench BenchmarkChain -benchtime 1x -timeout 60m ./jobs/

# The market communication at scale: 900 DSOs, 200,000 EDIFACT files and
# 20,000 mails on SQLite and on PostgreSQL; the overview and the 90-day
# reply reconciliation as an operator calls them.
# The chain benchmark of a base commit against the work tree, alternately,
# with each metric's median and ratio: `make bench-compare BASE=13683c2`.
# Every change to storage/lake, storage/catalog, pipeline/forecast,
# pipeline/position or jobs reports these ratios (docs/benchmarks.md).
BASE ?=
RUNS ?= 3
LOCATIONS ?= 200000
bench-compare: test-deps
	@test -n "$(BASE)" || { echo "usage: make bench-compare BASE=<commit> [RUNS=3] [LOCATIONS=200000]" >&2; exit 2; }
	RUNS=$(RUNS) SCHEDBRIDGE_BENCH_LOCATIONS=$(LOCATIONS) ./deploy/dev/bench-compare.sh $(BASE)

bench-mako: test-deps
	$(GO) test -run '^$$' -bench BenchmarkMakoViews -benchtime 10x -timeout 30m -v ./jobs/

# The operators' console at the scale of the others (issue 17): 1,000,000
# market locations, 900 DSOs with 200,000 EDIFACT files and 20,000 mails, and
# a year of runs, events, schedules and inbox files on SQLite + the local
# store and on PostgreSQL + MinIO; the console's and the app's summary
# through the HTTP handler, the parts they read, and the cheapest
# authenticated request as their peer.
bench-console: test-deps
	SCHEDBRIDGE_BENCH_LOCATIONS=1000000 $(GO) test -run '^$$' -bench BenchmarkConsoleSummary -benchtime 20x -timeout 90m -v ./jobs/

# The load generator against a real server process, 64 clients for 10 s on
# SQLite and on a PostgreSQL server the script starts on loopback (fsync on);
# prints both and PostgreSQL's figures as ratios to SQLite's (PostgreSQL
# comes from make test-deps).
loadtest: build
	./deploy/dev/loadtest.sh

# The browser tests of the portal (TestPortalBrowser) and of the operators'
# console (TestConsoleBrowser, desktop and phone width) with their full-page
# screenshots going to docs/screenshots instead of a temporary directory.
screenshots: build
	SCHEDBRIDGE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'TestPortalBrowser|TestConsoleBrowser' ./cmd/schedbridge/

# Refreshes the Redoc bundle that GET /docs serves (api/docs) from npm:
# `make docs-bundle` for the pinned version, REDOC_VERSION=x.y.z for another.
docs-bundle:
	./deploy/dev/openapi/refresh-redoc.sh $(REDOC_VERSION)

clean:
	rm -rf $(BIN)
