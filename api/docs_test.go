package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestDocs checks the /docs page without a browser (TestDocsBrowser in
// cmd/schedbridge renders it in Chromium): no credential, a policy with a
// fresh style nonce that the page hands to Redoc, no inline script, and the
// scripts served with their content type and validators.
func TestDocs(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{})
	nonceAttr := regexp.MustCompile(`data-style-nonce="([A-Za-z0-9_-]{22})"`)
	var nonces []string
	for range 2 {
		r := f.do("GET", "/docs", nil)
		if r.code != 200 || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET /docs: %d %q", r.code, r.header.Get("Content-Type"))
		}
		m := nonceAttr.FindSubmatch(r.body)
		if m == nil {
			t.Fatalf("no style nonce in the page:\n%s", r.body)
		}
		nonce := string(m[1])
		nonces = append(nonces, nonce)
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'nonce-" + nonce + "'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("policy %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http") {
			t.Errorf("policy %q allows inline code or another origin", csp)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control %q: a page with a nonce must not be cached", r.header.Get("Cache-Control"))
		}
		// Every script is a file of this server.
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(r.body, -1) {
			if !regexp.MustCompile(`src="docs/[a-z.]+\.js"`).Match(tag) {
				t.Errorf("inline or foreign script %s", tag)
			}
		}
	}
	if nonces[0] == nonces[1] {
		t.Errorf("two pages share the nonce %s", nonces[0])
	}

	bundle, err := os.ReadFile("docs/redoc.standalone.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		code     int
		wantBody []byte
	}{
		{"/docs/redoc.standalone.js", 200, bundle},
		{"/docs/init.js", 200, nil},
		{"/docs/index.html", 404, nil},
		{"/docs/SOURCE.md", 404, nil},
	} {
		r := f.do("GET", tc.path, nil)
		if r.code != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.path, r.code, tc.code)
			continue
		}
		if tc.code != 200 {
			continue
		}
		if ct := r.header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
		if tc.wantBody != nil && string(r.body) != string(tc.wantBody) {
			t.Errorf("GET %s: %d bytes, not the file's %d", tc.path, len(r.body), len(tc.wantBody))
		}
		etag := r.header.Get("ETag")
		if again := f.do("GET", tc.path, nil, "If-None-Match", etag); etag == "" || again.code != 304 {
			t.Errorf("GET %s with If-None-Match %s: %d, want 304", tc.path, etag, again.code)
		}
	}

	// The bundle is the npm file that SOURCE.md names, byte for byte.
	note, err := os.ReadFile("docs/SOURCE.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bundle)
	if !strings.Contains(string(note), "- sha256: "+hex.EncodeToString(sum[:])+"\n") {
		t.Errorf("docs/redoc.standalone.js (sha256 %x) is not the file docs/SOURCE.md names: run `make docs-bundle`", sum)
	}
}
