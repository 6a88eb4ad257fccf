#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the PostgreSQL
# server binaries (initdb, pg_ctl), which the tests start on loopback.
# Idempotent: does nothing when everything is there.
set -euo pipefail

have_pg() {
  command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if ! have_pg || ! id postgres >/dev/null 2>&1; then
  echo "test-deps: installing postgresql-15" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "test-deps: need root or sudo to apt-get install postgresql-15" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq postgresql-15 >/dev/null
  # Debian starts a cluster of its own on install; the tests start their own.
  $SUDO service postgresql stop >/dev/null 2>&1 || true
fi
have_pg || { echo "test-deps: initdb still not found" >&2; exit 1; }
