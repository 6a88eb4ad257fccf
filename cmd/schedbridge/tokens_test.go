package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestMachineClients follows the README's "Machine clients" section on both
// backends: register the company's issuer and a client, fetch a token by
// client credentials from a real authorization server (npm oidc-provider),
// call the API with it, revoke the client, remove the issuer.
func TestMachineClients(t *testing.T) {
	const aud = "https://schedbridge.example.com/v1"
	idp := portaltest.StartIdP(t, portaltest.IdPOptions{
		Machines:  []portaltest.MachineClient{{ID: "acme-forecaster", Secret: "s3cret-forecaster"}},
		Resources: []portaltest.ResourceServer{{Audience: aud, Scopes: []string{"schedbridge:data", "schedbridge:process"}}},
	})
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			in := newInstance(t, d)
			in.cli(0, "portfolio", "put", "acme", "--name", "ACME", "--control-areas", "TenneT")

			// Bad registrations are refused at the door and change nothing.
			_, stderr := in.cli(2, "issuer", "add", "http://idp.example.com", "--audience", aud)
			if !strings.Contains(stderr, "plain http is accepted on loopback addresses only") {
				t.Errorf("http issuer: %s", stderr)
			}
			in.cli(2, "issuer", "add", idp.Issuer)
			if _, stderr := in.cli(2, "issuer", "add", idp.Issuer+"/", "--audience", aud); !strings.Contains(stderr, "the document names the issuer") {
				t.Errorf("issuer with a slash: %s", stderr)
			}
			if _, stderr := in.cli(2, "client", "add", "--issuer", idp.Issuer, "--client-id", "acme-forecaster", "--scope", "data", "--portfolio", "acme"); !strings.Contains(stderr, "is not registered") {
				t.Errorf("client of an unregistered issuer: %s", stderr)
			}
			if out, _ := in.cli(0, "issuer", "list"); strings.Contains(out, idp.Issuer) {
				t.Errorf("refused issuers were stored: %s", out)
			}

			_, stderr = in.cli(0, "issuer", "add", idp.Issuer, "--audience", aud)
			if !strings.Contains(stderr, idp.Issuer+"/jwks") {
				t.Errorf("issuer add: %s", stderr)
			}
			in.cli(2, "client", "add", "--issuer", idp.Issuer, "--client-id", "acme-forecaster", "--scope", "data")
			out, _ := in.cli(0, "client", "add", "--issuer", idp.Issuer, "--client-id", "acme-forecaster", "--scope", "data", "--portfolio", "acme", "--label", "forecast robot")
			if !regexp.MustCompile(`^cli_[0-9a-f]{10}\n$`).MatchString(out) {
				t.Errorf("client add printed %q", out)
			}
			out, _ = in.cli(0, "client", "list", "--json")
			var clients []map[string]any
			if err := json.Unmarshal([]byte(out), &clients); err != nil || len(clients) != 1 ||
				clients[0]["client_id"] != "acme-forecaster" || clients[0]["scope"] != "data" || clients[0]["portfolio"] != "acme" {
				t.Errorf("client list: %s", out)
			}

			in.serve()
			status, tok, _ := idp.ClientCredentials(t, "acme-forecaster", "s3cret-forecaster", aud, "schedbridge:data")
			if status != 200 {
				t.Fatalf("token: %d", status)
			}
			call := func(method, path string, body []byte) (int, http.Header, string) {
				req, _ := http.NewRequest(method, "http://"+in.addr+path, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(b)
			}
			if code, _, body := call("POST", "/v1/forecasts", forecastBody("2026-11-27", 96, 3)); code != 200 || !strings.Contains(body, `"portfolio":"acme"`) {
				t.Fatalf("post with token: %d %s", code, body)
			}
			if code, h, _ := call("GET", "/v1/process/runs", nil); code != 403 || !strings.Contains(h.Get("WWW-Authenticate"), "insufficient_scope") {
				t.Errorf("process route with a data client: %d %v", code, h)
			}

			in.cli(0, "client", "revoke", "--issuer", idp.Issuer, "--client-id", "acme-forecaster")
			if code, h, body := call("GET", "/v1/forecasts/2026-11-27", nil); code != 401 || h.Get("WWW-Authenticate") != `Bearer error="invalid_token"` ||
				!strings.Contains(body, "revoked") {
				t.Errorf("after revoke: %d %v %s", code, h, body)
			}
			in.cli(2, "client", "revoke", "--issuer", idp.Issuer, "--client-id", "nobody")
			in.cli(0, "issuer", "remove", idp.Issuer)
			out, _ = in.cli(0, "issuer", "list", "--json")
			var issuers []map[string]any
			if err := json.Unmarshal([]byte(out), &issuers); err != nil || len(issuers) != 1 || issuers[0]["removed_at"] == nil {
				t.Errorf("issuer list after remove: %s", out)
			}
			// Removing the issuer revoked its clients: the token is refused
			// whether the server remembered it as verified or not.
			if code, _, body := call("GET", "/v1/forecasts/2026-11-27", nil); code != 401 || !strings.Contains(body, "revoked") {
				t.Errorf("after issuer remove: %d %s", code, body)
			}
		})
	}
}
