package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// cachedJSON answers v as JSON with a weak ETag over the bytes of the
// answer, or 304 Not Modified without a body when the request's
// If-None-Match names that tag. Consoles and the operators' app poll every
// minute; a 304 spares them the body, and the tag is weak because a gzip
// encoding of the same JSON is the same representation for them.
//
// Everything in such an answer is a recorded fact (timestamps, not ages or
// countdowns), so the tag changes only when the state does.
func (s *Server) cachedJSON(c *gin.Context, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.fail(c, err)
		return
	}
	sum := sha256.Sum256(body)
	tag := `W/"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	h := c.Writer.Header()
	h.Set("ETag", tag)
	// no-cache: a cache may keep the answer but must ask again, with the tag,
	// before it shows it; that is exactly the conditional poll.
	h.Set("Cache-Control", "private, no-cache")
	h.Add("Vary", "X-API-Key, Authorization")
	if status == http.StatusOK && etagMatches(c.GetHeader("If-None-Match"), tag) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return
	}
	c.Data(status, "application/json; charset=utf-8", body)
}

// etagMatches applies RFC 9110's weak comparison of If-None-Match: "*" or
// any listed tag whose opaque part equals ours.
func etagMatches(header, tag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(tag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}
