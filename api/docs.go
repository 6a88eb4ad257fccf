package api

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// GET /docs renders the OpenAPI document with Redoc, from files embedded
// into the binary (docs/SOURCE.md names the npm package they come from), so
// that it works without any other origin, offline and behind a firewall.
//
//go:embed docs/index.html docs/init.js docs/redoc.standalone.js
var docsFS embed.FS

var (
	docsPage = template.Must(template.ParseFS(docsFS, "docs/index.html"))
	// The page's scripts, by their path under /docs/.
	docsAssets = map[string]docsAsset{
		"init.js":             newDocsAsset("docs/init.js"),
		"redoc.standalone.js": newDocsAsset("docs/redoc.standalone.js"),
	}
)

// docsCSP is the page's Content-Security-Policy; %s is the request's style
// nonce. Only this server's scripts run, no inline script, and nothing is
// fetched from another origin (the document comes from connect-src 'self').
// What Redoc needs beyond that, checked in Chromium by TestDocsBrowser:
//   - style-src: Redoc styles itself with styled-components, which inserts
//     <style> elements at run time. Redoc hands its nonce option (set by
//     init.js from the page) to them, so no 'unsafe-inline' is needed. Two
//     <style> elements are created when the bundle loads, before Redoc.init
//     can hand over the nonce, and are allowed by their hashes: an empty one
//     (styled-components' first sheet) and perfect-scrollbar's fixed CSS
//     (redocScrollbarCSSHash). Element styles are set through the DOM
//     (CSSOM), which a policy does not restrict.
//   - img-src data: for the icons inlined in its CSS.
//   - worker-src blob: for its search index, which runs in a Worker built
//     from a blob: URL of code inside the bundle.
//
// Redoc 2.5.4 also shows its logo from its CDN in the side menu; the policy
// blocks that request, as it should, and Redoc hides the image on error.
const docsCSP = "default-src 'none'; script-src 'self'; " +
	"style-src 'nonce-%s' '" + emptyCSSHash + "' '" + redocScrollbarCSSHash + "'; " +
	"img-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const (
	// emptyCSSHash is the CSP hash of an empty <style> element.
	emptyCSSHash = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	// redocScrollbarCSSHash is the CSP hash of the perfect-scrollbar CSS in
	// docs/redoc.standalone.js. A new bundle may change it: TestDocsBrowser
	// then fails, and Chromium's message names the new hash.
	redocScrollbarCSSHash = "sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc="
)

// docsAsset is an embedded script with its validator.
type docsAsset struct {
	body []byte
	etag string
}

func newDocsAsset(name string) docsAsset {
	b, err := docsFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return docsAsset{body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

func (s *Server) docsRoutes(e *gin.Engine) {
	e.GET("/docs", s.docs)
	e.GET("/docs/:file", s.docsAsset)
}

// docs serves the page with a fresh style nonce.
func (s *Server) docs(c *gin.Context) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		s.fail(c, fmt.Errorf("docs nonce: %w", err))
		return
	}
	// URL-safe base64, which CSP takes, needs no escaping in the page.
	nonce := base64.RawURLEncoding.EncodeToString(raw)
	var page bytes.Buffer
	if err := docsPage.Execute(&page, struct{ StyleNonce string }{nonce}); err != nil {
		s.fail(c, fmt.Errorf("docs page: %w", err))
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf(docsCSP, nonce))
	// The nonce is per answer, so the page must not be cached.
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	c.Data(http.StatusOK, "text/html; charset=utf-8", page.Bytes())
}

// docsAsset serves the page's scripts; their ETag lets a browser keep them
// until the binary brings other ones.
func (s *Server) docsAsset(c *gin.Context) {
	a, ok := docsAssets[c.Param("file")]
	if !ok {
		c.JSON(http.StatusNotFound, gin.H{"detail": "Not Found"})
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(a.body))
}
