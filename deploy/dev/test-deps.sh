#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the PostgreSQL
# server binaries (initdb, pg_ctl), which the tests start on loopback.
# Idempotent: does nothing when everything is there.
set -euo pipefail

# apt_install installs Debian packages as root, or through sudo.
apt_install() {
  local SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "test-deps: need root or sudo to apt-get install $*" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "$@" >/dev/null
}

# as_root runs a command as root, or through sudo.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

have_pg() {
  command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if ! have_pg || ! id postgres >/dev/null 2>&1; then
  echo "test-deps: installing postgresql-15" >&2
  apt_install postgresql-15
  # Debian starts a cluster of its own on install; the tests start their own.
  as_root service postgresql stop >/dev/null 2>&1 || true
fi
have_pg || { echo "test-deps: initdb still not found" >&2; exit 1; }

# A C compiler for the race detector's run (make test-race), which needs cgo.
if ! command -v gcc >/dev/null 2>&1; then
  echo "test-deps: installing gcc" >&2
  apt_install gcc libc6-dev
fi

# S3 servers for the object-store tests (storage/objstore/objtest), pinned;
# keep module and version in sync with objtest.go. The tests never build them.
TOOLS_DIR="${SCHEDBRIDGE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schedbridge/bin}"
install_tool() { # name module version
  local dir="$TOOLS_DIR/$1-$3"
  [ -x "$dir/$1" ] && return 0
  echo "test-deps: building $2@$3 into $dir (takes minutes the first time)" >&2
  GOBIN="$dir" go install "$2@$3"
}
install_tool minio github.com/minio/minio v0.0.0-20260212201848-7aac2a2c5b7c
install_tool versitygw github.com/versity/versitygw/cmd/versitygw v1.8.0

# The aws CLI, for tests that check the S3 servers with a second client.
if ! command -v aws >/dev/null 2>&1; then
  echo "test-deps: installing awscli" >&2
  apt_install awscli
fi

# DuckDB for Node (npm @duckdb/node-api, which ships its binary), the second
# independent Parquet reader of the lake tests (storage/lake/laketest), pinned;
# keep the version in sync with laketest.go.
NODE_DIR="${SCHEDBRIDGE_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schedbridge/node}"
DUCKDB_NODE_VERSION=1.5.6-r.1
if ! grep -qs "\"version\": \"$DUCKDB_NODE_VERSION\"" "$NODE_DIR/node_modules/@duckdb/node-api/package.json"; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "test-deps: installing nodejs and npm" >&2
    apt_install nodejs npm
  fi
  echo "test-deps: installing @duckdb/node-api@$DUCKDB_NODE_VERSION into $NODE_DIR" >&2
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "@duckdb/node-api@$DUCKDB_NODE_VERSION" >/dev/null
fi

# Dovecot for the IMAP tests (ingest/mail/imaptest): the tests start their own
# instance with their own configuration on a free loopback port.
if [ ! -x /usr/sbin/dovecot ]; then
  echo "test-deps: installing dovecot-imapd" >&2
  apt_install dovecot-imapd
  # Debian starts a system Dovecot on port 143 on install; the tests neither
  # need nor use it.
  as_root service dovecot stop >/dev/null 2>&1 || true
  if command -v systemctl >/dev/null 2>&1; then
    as_root systemctl disable dovecot >/dev/null 2>&1 || true
  fi
fi
[ -x /usr/sbin/dovecot ] || { echo "test-deps: /usr/sbin/dovecot still not found" >&2; exit 1; }

# promtool checks the names of the served metrics against Prometheus's
# conventions (cmd/schedbridge/metrics_test.go). Debian ships it in the
# prometheus package only; the server that comes with it, and that Debian may
# start on install, is neither needed nor used. Its recommended node exporter
# would be another service nobody needs, so recommendations are left out.
if ! command -v promtool >/dev/null 2>&1; then
  echo "test-deps: installing prometheus (for promtool)" >&2
  apt_install --no-install-recommends prometheus
  as_root service prometheus stop >/dev/null 2>&1 || true
  if command -v systemctl >/dev/null 2>&1; then
    as_root systemctl disable prometheus >/dev/null 2>&1 || true
  fi
fi
command -v promtool >/dev/null 2>&1 || { echo "test-deps: promtool still not found" >&2; exit 1; }

# The portal tests (api/portal/portaltest, deploy/dev/portal): a real OpenID
# Connect provider (npm oidc-provider), an SMTP catcher with a REST API (npm
# maildev) and a browser (Debian's chromium driven by npm playwright-core;
# Playwright's own browser download cannot reach its host from here).
# Pinned; keep the versions in sync with deploy/dev/portal/package.json and
# portaltest.
# chromium-l10n gives the browser its German resources, so that date fields
# read TT.MM.JJJJ in the tests and screenshots as they do for the users.
if [ ! -x /usr/bin/chromium ] || [ ! -e /usr/lib/chromium/locales/de.pak ]; then
  echo "test-deps: installing chromium and chromium-l10n" >&2
  apt_install chromium chromium-l10n
fi
[ -x /usr/bin/chromium ] || { echo "test-deps: /usr/bin/chromium still not found" >&2; exit 1; }

# npm_install_pinned installs the name@version specs that $NODE_DIR lacks at
# exactly that version. npm keeps the packages already recorded in
# $NODE_DIR/package.json (@duckdb/node-api above, the other lists) when it
# adds these.
npm_install_pinned() {
  local missing="" spec name version
  for spec in "$@"; do
    name="${spec%@*}" version="${spec##*@}"
    if ! grep -qs "\"version\": \"$version\"" "$NODE_DIR/node_modules/$name/package.json"; then
      missing="$missing $spec"
    fi
  done
  [ -n "$missing" ] || return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "test-deps: installing nodejs and npm" >&2
    apt_install nodejs npm
  fi
  echo "test-deps: installing$missing into $NODE_DIR" >&2
  mkdir -p "$NODE_DIR"
  # shellcheck disable=SC2086
  npm install --prefix "$NODE_DIR" --save-exact --no-audit --no-fund --loglevel=error $missing >/dev/null
}
PORTAL_NODE_PACKAGES="oidc-provider@9.13.3 maildev@3.0.0 playwright-core@1.65.1"
# shellcheck disable=SC2086
npm_install_pinned $PORTAL_NODE_PACKAGES

# The OpenAPI tests (cmd/schedbridge/openapi_test.go, deploy/dev/openapi): two
# validators of the served document, and a client generated from it and
# compiled with TypeScript. Pinned; keep the versions in sync with
# openapi_test.go. @apidevtools/swagger-parser 13.1 needs Node 22, so 13.0;
# openapi-typescript 7 wants TypeScript 5.
OPENAPI_NODE_PACKAGES="@redocly/cli@2.77.0 @apidevtools/swagger-parser@13.0.0 openapi-typescript@7.13.0 openapi-fetch@0.17.0 typescript@5.9.3"
# shellcheck disable=SC2086
npm_install_pinned $OPENAPI_NODE_PACKAGES

# The Iceberg tests (storage/lake/laketest): npm avsc reads the tables'
# manifest lists and manifests (Avro, deflate-coded), so that the tests check
# the live files of a snapshot with a reader other than iceberg-go. Pinned;
# keep the version in sync with laketest.AvscVersion.
LAKE_NODE_PACKAGES="avsc@5.7.9"
# shellcheck disable=SC2086
npm_install_pinned $LAKE_NODE_PACKAGES

# The image test (deploy/image_test.go): Debian's buildah builds the FROM
# scratch image, and podman runs it with Debian's runc (crun, podman's
# default, fails on hybrid cgroup hierarchies; see docs/operations.md).
if ! command -v buildah >/dev/null 2>&1 || ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  echo "test-deps: installing buildah, podman and runc" >&2
  apt_install buildah podman runc
fi
for bin in buildah podman runc; do
  command -v "$bin" >/dev/null 2>&1 || { echo "test-deps: $bin still not found" >&2; exit 1; }
done
