package pipeline_test

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestCheckIssuerURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://login.example.com/realms/acme", true},
		{"http://127.0.0.1:5556", true},
		{"http://localhost:5556/x", true},
		{"http://[::1]:80", true},
		{"http://idp.example.com", false},
		{"http://10.0.0.1", false},
		{"ftp://idp.example.com", false},
		{"https://idp.example.com?x=1", false},
		{"https://idp.example.com#f", false},
		{"https://user@idp.example.com", false},
		{"idp.example.com", false},
	} {
		err := pipeline.CheckIssuerURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.url, err)
		}
	}
}
