package portaltest

import "testing"

// PlaywrightCoreVersion is the pinned npm playwright-core that drives
// Debian's Chromium in the portal's browser tests; keep it in sync with
// deploy/dev/test-deps.sh and deploy/dev/portal/package.json.
const PlaywrightCoreVersion = "1.65.1"

// NodeModules returns node's path and the node_modules directory (for
// NODE_PATH) that holds npm pkg at version, so that a test can run a node
// script of its own against the packages test-deps.sh installed. It fails
// tb, pointing to `make test-deps`, when node or the package is missing or
// at another version: a test that needs them must not pass silently.
func NodeModules(tb testing.TB, pkg, version string) (node, modules string) {
	tb.Helper()
	return nodeModules(tb, pkg, version)
}
