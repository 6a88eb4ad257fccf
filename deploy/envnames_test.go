package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var envName = regexp.MustCompile(`^SCHEDBRIDGE_[A-Z0-9_]+$`)

// goRuntimeEnv are the variables the manifests may set beside the binary's
// own: the Go runtime reads them, not cmd/schedbridge.
var goRuntimeEnv = map[string]bool{"GOMEMLIMIT": true, "GOGC": true, "GODEBUG": true}

// binaryEnvNames returns the environment variables that cmd/schedbridge
// reads, taken from its source: every string literal of its non-test files
// that is a SCHEDBRIDGE_ name. Only that package reads the environment
// (the layout's rule), and reading the source rather than a list kept here
// makes a renamed or removed variable fail the manifests that still set it.
func binaryEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../cmd/schedbridge/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	names := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && envName.MatchString(s) {
					names[s] = true
				}
			}
			return true
		})
	}
	// A floor, so that a parse that found nothing cannot pass every check.
	for _, must := range []string{"SCHEDBRIDGE_DATABASE_URL", "SCHEDBRIDGE_ADDR", "SCHEDBRIDGE_S3_ENDPOINT"} {
		if !names[must] {
			t.Fatalf("%s not found in cmd/schedbridge; found %d names", must, len(names))
		}
	}
	return names
}

// checkEnvName fails for a variable that neither the binary nor the Go
// runtime reads: a typo there would be ignored silently at run time.
func checkEnvName(t *testing.T, known map[string]bool, where, name string) {
	t.Helper()
	if !known[name] && !goRuntimeEnv[name] {
		t.Errorf("%s sets %s, which cmd/schedbridge does not read", where, name)
	}
}
