#!/usr/bin/env bash
# Refreshes the Redoc bundle that GET /docs serves (api/docs, embedded into
# the binary) from the npm package redoc: the standalone bundle, its licence
# and the licences of what it bundles, and api/docs/SOURCE.md, which names the
# version, the package's integrity and the bundle's SHA-256 (the tests check
# the embedded bundle against it).
# Usage: deploy/dev/openapi/refresh-redoc.sh [VERSION]   (make docs-bundle)
set -euo pipefail

VERSION="${1:-2.5.4}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
dest="$root/api/docs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

npm pack --silent --json --pack-destination "$tmp" "redoc@$VERSION" >"$tmp/pack.json"
read -r file integrity < <(node -e 'const [p] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(p.filename, p.integrity)' "$tmp/pack.json")
tar -xzf "$tmp/$file" -C "$tmp"
cp "$tmp/package/bundles/redoc.standalone.js" "$dest/redoc.standalone.js"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dest/redoc.standalone.js.LICENSE.txt"
cp "$tmp/package/LICENSE" "$dest/LICENSE"
sha="$(sha256sum "$dest/redoc.standalone.js" | cut -d' ' -f1)"
cat >"$dest/SOURCE.md" <<NOTE
# Redoc bundle of GET /docs

- npm package: redoc@$VERSION (licence MIT, see LICENSE; the licences of what the bundle
  contains are in redoc.standalone.js.LICENSE.txt)
- package integrity: $integrity
- file: bundles/redoc.standalone.js, unchanged
- sha256: $sha

Refresh with \`make docs-bundle\` (deploy/dev/openapi/refresh-redoc.sh [VERSION]), then run
\`go test ./api/ ./cmd/schedbridge/ -run Docs\`, which loads the page in Chromium.
NOTE
echo "api/docs: redoc@$VERSION, sha256 $sha"
