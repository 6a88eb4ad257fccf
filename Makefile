# The two set-up commands are `make run` and `make test` (see README).
GO      ?= go
BIN     := bin
export CGO_ENABLED ?= 0

.PHONY: all build run test test-deps bench bench-go bench-inbox loadtest vet fmt clean

all: build

build:
	$(GO) build -o $(BIN)/schedbridge ./cmd/schedbridge
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen

# Serves on the embedded default: SQLite and files under ./var.
run: build
	./$(BIN)/schedbridge serve

test-deps:
	./deploy/dev/test-deps.sh

# The whole suite, including the contract tests against a real PostgreSQL
# server that the tests start on loopback.
test: test-deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Go benchmarks, then the load generator against a real server process.
bench: test-deps bench-go loadtest

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5x ./...

# The issue's bulk benchmark: a 1,000,000-row x 96 metered-data CSV through
# MinIO into SQLite and into PostgreSQL (wall time, values/s, peak RSS).
bench-inbox: test-deps
	SCHEDBRIDGE_BENCH_INBOX_ROWS=1000000 $(GO) test -run '^$$' -bench InboxMeteredCSV -benchtime 1x -timeout 60m ./ingest/inbox/

loadtest: build
	./deploy/dev/loadtest.sh

clean:
	rm -rf $(BIN)
