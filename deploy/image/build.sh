#!/usr/bin/env bash
# Builds the container image from a static schedbridge binary with buildah and
# the Containerfile at the repository root.
#
#   deploy/image/build.sh BINARY IMAGE[:TAG]
#
# The build context is a staging directory holding only what the image gets
# (the binary, the host's CA bundle and empty directories), so neither
# the repository nor bin/ is sent to the builder. VERSION, REVISION and
# CREATED (OCI labels) default to git describe, the commit and the clock.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY IMAGE[:TAG]" >&2; exit 2; }
binary=$1 image=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

[ -x "$binary" ] || { echo "build.sh: $binary is not an executable" >&2; exit 1; }
[ -r "$ca" ] || { echo "build.sh: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }
command -v buildah >/dev/null || { echo "build.sh: buildah not found (Debian: apt-get install buildah)" >&2; exit 1; }
# A dynamically linked binary would fail in the empty image with a bare
# "no such file or directory"; refuse it here with a reason instead.
if command -v file >/dev/null && file -L "$binary" | grep -q "dynamically linked"; then
  echo "build.sh: $binary is dynamically linked; build it with CGO_ENABLED=0" >&2
  exit 1
fi

version=${VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=${REVISION:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}
created=${CREATED:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}

ctx=$(mktemp -d "${TMPDIR:-/tmp}/schedbridge-image-XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$binary" "$ctx/schedbridge"
chmod 0755 "$ctx/schedbridge"
cp "$ca" "$ctx/ca-certificates.crt"
chmod 0644 "$ctx/ca-certificates.crt"
mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/var/lib" "$ctx/data"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs/var" "$ctx/rootfs/var/lib"
chmod 0750 "$ctx/data"

buildah bud --quiet \
  --file "$root/Containerfile" \
  --build-arg "VERSION=$version" \
  --build-arg "REVISION=$revision" \
  --build-arg "CREATED=$created" \
  --tag "$image" \
  "$ctx"
