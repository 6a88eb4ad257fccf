package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// operation is what the tests read of an OpenAPI operation.
type operation struct {
	OperationID string                 `json:"operationId"`
	Summary     string                 `json:"summary"`
	Security    *[]map[string][]string `json:"security"`
	Parameters  []any                  `json:"parameters"`
	RequestBody any                    `json:"requestBody"`
	Responses   map[string]struct {
		Ref     string         `json:"$ref"`
		Headers map[string]any `json:"headers"`
	} `json:"responses"`
}

// openapiDoc is the served document, typed where the tests look and raw
// for resolving references.
type openapiDoc struct {
	OpenAPI    string                          `json:"openapi"`
	Info       struct{ Version string }        `json:"info"`
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Responses map[string]struct {
			Headers map[string]any `json:"headers"`
		} `json:"responses"`
	} `json:"components"`
	raw map[string]any
}

func servedDocument(t *testing.T, f *fixture) (openapiDoc, []byte) {
	t.Helper()
	r := f.do("GET", "/openapi.json", nil)
	if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", r.code, r.header.Get("Content-Type"))
	}
	var doc openapiDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.body, &doc.raw); err != nil {
		t.Fatal(err)
	}
	return doc, r.body
}

// isAsset reports the files of the /docs page, which are not operations of
// the API and so are not in the document.
func isAsset(path string) bool { return strings.HasPrefix(path, "/docs/") }

var ginParam = regexp.MustCompile(`:([a-z_]+)`)

// TestOpenAPIDocument fails when a registered route is missing from the
// document, when an operation lacks an operationId, a summary, its security
// or the status codes its middlewares give, when a $ref dangles, when a
// YAML slip left a key without a value, or when the version drifts.
func TestOpenAPIDocument(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{})
	doc, body := servedDocument(t, f)
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "0.7.0" {
		t.Errorf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}

	ids := map[string]string{}
	for path, methods := range doc.Paths {
		for method, op := range methods {
			at := strings.ToUpper(method) + " " + path
			switch {
			case op.OperationID == "":
				t.Errorf("%s: no operationId", at)
			case ids[op.OperationID] != "":
				t.Errorf("%s: operationId %s is also %s's", at, op.OperationID, ids[op.OperationID])
			}
			ids[op.OperationID] = at
			if strings.TrimSpace(op.Summary) == "" {
				t.Errorf("%s: no summary", at)
			}
			// Explicit on every operation, so that none inherits a
			// requirement by accident; [] means no credential.
			if op.Security == nil {
				t.Errorf("%s: no security", at)
			}
		}
	}

	for _, rt := range f.srv.Routes() {
		if isAsset(rt.Path) {
			continue
		}
		path := ginParam.ReplaceAllString(rt.Path, "{$1}")
		op, ok := doc.Paths[path][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("route %s %s missing from openapi.json", rt.Method, path)
			continue
		}
		// Every bridge route passes the drain middleware (503), except
		// the liveness probe, which stays 200 while the server drains.
		want := []string{"503"}
		if path == "/livez" {
			want = nil
		}
		if op.Security != nil && len(*op.Security) > 0 && strings.HasPrefix(path, "/v1/") && path != "/v1/inbox/events" {
			// requireScope, rateLimit and the recoverer; validation only
			// where there is something to validate.
			want = append(want, "401", "403", "429", "500")
			if len(op.Parameters) > 0 || op.RequestBody != nil {
				want = append(want, "422")
			}
		}
		for _, code := range want {
			if _, ok := op.Responses[code]; !ok {
				t.Errorf("%s %s: no %s response", rt.Method, path, code)
			}
		}
	}

	// The headers that clients act on, on every response that has them.
	headers := map[string]string{"401": "WWW-Authenticate", "429": "Retry-After", "503": "Retry-After"}
	for path, methods := range doc.Paths {
		if strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/portal/") || path == "/v1/inbox/events" {
			continue // the portal's contract and the webhook send neither
		}
		for method, op := range methods {
			for code, name := range headers {
				resp, ok := op.Responses[code]
				if !ok {
					continue
				}
				h := resp.Headers
				if ref, ok := strings.CutPrefix(resp.Ref, "#/components/responses/"); ok {
					h = doc.Components.Responses[ref].Headers
				}
				if _, ok := h[name]; !ok {
					t.Errorf("%s %s: the %s response documents no %s header", strings.ToUpper(method), path, code, name)
				}
			}
		}
	}

	for _, ref := range regexp.MustCompile(`"\$ref":"#/([^"]+)"`).FindAllStringSubmatch(string(body), -1) {
		var node any = doc.raw
		for _, part := range strings.Split(ref[1], "/") {
			m, ok := node.(map[string]any)
			if !ok || m[part] == nil {
				t.Errorf("dangling $ref #/%s", ref[1])
				break
			}
			node = m[part]
		}
	}

	// A YAML flow mapping with an unquoted comma in a value, such as
	// {description: What is missing, in German}, parses as a second key
	// ("in German") without a value; the document has no real null value, so
	// every null is such a key.
	var nulls func(node any, at string)
	nulls = func(node any, at string) {
		switch n := node.(type) {
		case map[string]any:
			for k, v := range n {
				if v == nil {
					t.Errorf("%s: key %q has no value (an unquoted comma in a flow mapping?)", at, k)
				}
				nulls(v, at+"/"+k)
			}
		case []any:
			for i, v := range n {
				nulls(v, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	nulls(doc.raw, "#")
}

// TestOpenAPISecurity asks the server which key scopes each /v1 route
// accepts (a refused scope is 403 before anything else runs) and compares
// that with the operation's security: the key roles must be exactly those
// scopes, and the OAuth 2.0 scopes their schedbridge: counterparts.
func TestOpenAPISecurity(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{})
	doc, _ := servedDocument(t, f)
	keys := map[string]string{"data": "data1", "process": "process", "report": "report1", "mobile": "mobile"}
	checked := 0
	for _, rt := range f.srv.Routes() {
		path := ginParam.ReplaceAllString(rt.Path, "{$1}")
		op, ok := doc.Paths[path][strings.ToLower(rt.Method)]
		if !ok || !strings.HasPrefix(path, "/v1/") || path == "/v1/inbox/events" {
			continue
		}
		// Placeholders for the path parameters: the scope check comes
		// first, so their values do not matter. The fixture wires no
		// pipeline runner or market communication, so nothing runs.
		url := ginParam.ReplaceAllString(rt.Path, "x")
		var accepted []string
		for _, scope := range slices.Sorted(maps.Keys(keys)) {
			r := f.as(keys[scope], rt.Method, url, nil)
			switch r.code {
			case 401:
				t.Fatalf("%s %s with the %s key: 401 %s", rt.Method, url, scope, r.body)
			case 403:
			default:
				accepted = append(accepted, scope)
			}
		}
		var roles, oauth []string
		if op.Security != nil {
			for _, req := range *op.Security {
				roles = append(roles, req["ApiKey"]...)
				for _, s := range req["OAuth2"] {
					oauth = append(oauth, strings.TrimPrefix(s, "schedbridge:"))
				}
			}
		}
		slices.Sort(roles)
		slices.Sort(oauth)
		if !slices.Equal(roles, accepted) || !slices.Equal(oauth, accepted) {
			t.Errorf("%s %s: accepts key scopes %v; the document says keys %v and tokens %v", rt.Method, path, accepted, roles, oauth)
		}
		checked++
	}
	if checked < 35 {
		t.Errorf("only %d routes checked", checked)
	}
}
