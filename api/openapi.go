package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"
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
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("openapi.yaml to JSON: %v", err))
	}
	return b
}

func (s *Server) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openapiJSON)
}
