package portal_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
)

// TestPortalOpenAPI checks that every portal API route is in the OpenAPI
// document with only the contract's status codes, and that the employee
// routes document 401, 403, 404 and 500, the writes also 400.
func TestPortalOpenAPI(t *testing.T) {
	raw, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tags      []string       `yaml:"tags"`
			Responses map[string]any `yaml:"responses"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	g := gin.New()
	portalapi.New(portalapi.Config{BaseURL: "https://portal.example"}, nil, nil, nil).Register(g)
	allowed := []string{"200", "201", "400", "401", "403", "404", "409", "500"}
	param := regexp.MustCompile(`:([a-z_]+)`)
	n := 0
	for _, rt := range g.Routes() {
		if strings.HasPrefix(rt.Path, "/portal") && rt.Path != "/portal/anmelden/sso" && rt.Path != "/portal/anmelden/sso/callback" {
			continue // HTML pages, listed in docs/portal.md
		}
		path := param.ReplaceAllString(rt.Path, "{$1}")
		op, ok := doc.Paths[path][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("route %s %s missing from openapi.yaml", rt.Method, path)
			continue
		}
		n++
		if !slices.Contains(op.Tags, "portal") {
			t.Errorf("%s %s: not tagged portal", rt.Method, path)
		}
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		for code := range op.Responses {
			if !slices.Contains(allowed, code) {
				t.Errorf("%s %s: status %s is not in the portal contract", rt.Method, path, code)
			}
		}
		if strings.HasPrefix(path, "/api/v1/portal/") {
			want := []string{"401", "403", "404", "500"}
			if rt.Method == "POST" {
				want = append(want, "400", "201")
			}
			for _, code := range want {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s: no %s response", rt.Method, path, code)
				}
			}
		}
	}
	if n < 12 {
		t.Errorf("only %d portal routes checked", n)
	}
}
