package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPortalConfig: the insecure cookie mode is a local-development setting
// that a production deployment (the default) refuses, and serve never
// starts with it there.
func TestPortalConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		ok   bool
		base string
	}{
		{"defaults", map[string]string{}, true, "http://localhost:8080"},
		{"insecure in production", map[string]string{"SCHEDBRIDGE_PORTAL_INSECURE_COOKIES": "true"}, false, ""},
		{"insecure marked production", map[string]string{"SCHEDBRIDGE_ENVIRONMENT": "production", "SCHEDBRIDGE_PORTAL_INSECURE_COOKIES": "true"}, false, ""},
		{"insecure in development", map[string]string{"SCHEDBRIDGE_ENVIRONMENT": "development", "SCHEDBRIDGE_PORTAL_INSECURE_COOKIES": "true"}, true, "http://localhost:8080"},
		{"unknown environment", map[string]string{"SCHEDBRIDGE_ENVIRONMENT": "prod"}, false, ""},
		{"base url with path", map[string]string{"SCHEDBRIDGE_PORTAL_BASE_URL": "https://x.example/portal"}, false, ""},
		{"base url", map[string]string{"SCHEDBRIDGE_PORTAL_BASE_URL": "https://portal.example.de"}, true, "https://portal.example.de"},
		{"idle above absolute", map[string]string{"SCHEDBRIDGE_PORTAL_SESSION_IDLE": "13h"}, false, ""},
		{"issuer without client", map[string]string{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER": "https://idp.example"}, false, ""},
		{"email trusted for the issuer", map[string]string{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER": "https://idp.example", "SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID": "c",
			"SCHEDBRIDGE_PORTAL_OIDC_EMAIL_TRUSTED_ISSUER": "https://idp.example"}, true, "http://localhost:8080"},
		{"email trusted for another issuer", map[string]string{"SCHEDBRIDGE_PORTAL_OIDC_ISSUER": "https://idp.example", "SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID": "c",
			"SCHEDBRIDGE_PORTAL_OIDC_EMAIL_TRUSTED_ISSUER": "https://old-idp.example"}, false, ""},
		{"email trusted without an issuer", map[string]string{"SCHEDBRIDGE_PORTAL_OIDC_EMAIL_TRUSTED_ISSUER": "https://idp.example"}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig("", func(k string) string { return c.env[k] })
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if c.ok && cfg.Portal.BaseURL != c.base {
				t.Errorf("base url %q, want %q", cfg.Portal.BaseURL, c.base)
			}
		})
	}
	var out, errb bytes.Buffer
	env := map[string]string{"SCHEDBRIDGE_PORTAL_INSECURE_COOKIES": "1", "SCHEDBRIDGE_DATA_DIR": t.TempDir()}
	if code := run(t.Context(), []string{"serve"}, &out, &errb, func(k string) string { return env[k] }); code != 2 ||
		!strings.Contains(errb.String(), "refused in production") {
		t.Errorf("serve with insecure cookies in production: exit %d, %s", code, errb.String())
	}
}
