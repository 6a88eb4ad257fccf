package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"

	"github.com/schedbridge/schedbridge/api/requestid"
)

// The document is written in YAML for people and served as JSON; it is
// converted once at start-up.
//
//go:embed openapi.yaml
var openapiYAML []byte

var openapiJSON = mustJSON(openapiYAML)

func mustJSON(y []byte) []byte {
	var doc map[string]any
	if err := yaml.Unmarshal(y, &doc); err != nil {
		panic(fmt.Sprintf("openapi.yaml: %v", err))
	}
	addRequestIDHeader(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("openapi.yaml to JSON: %v", err))
	}
	return b
}

// addRequestIDHeader documents the X-Request-ID header on every response of
// the document that is not a reference, those of components.responses
// included: the requestID middleware sets it on every answer, so the
// document says so in one place and no operation, today's or a later one,
// can lack it.
func addRequestIDHeader(doc map[string]any) {
	ref := map[string]any{"$ref": "#/components/headers/RequestID"}
	add := func(responses any) {
		rs, _ := responses.(map[string]any)
		for _, r := range rs {
			resp, ok := r.(map[string]any)
			if !ok || resp["$ref"] != nil {
				continue
			}
			h, _ := resp["headers"].(map[string]any)
			if h == nil {
				h = map[string]any{}
				resp["headers"] = h
			}
			if h[requestid.Header] == nil {
				h[requestid.Header] = ref
			}
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			if o, ok := op.(map[string]any); ok {
				add(o["responses"])
			}
		}
	}
	if c, ok := doc["components"].(map[string]any); ok {
		add(c["responses"])
	}
}

func (s *Server) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openapiJSON)
}
