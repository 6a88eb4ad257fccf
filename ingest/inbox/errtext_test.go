package inbox

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrorText: the error recorded on a row keeps its cause and masks the
// secrets that drivers and clients put into their messages.
func TestErrorText(t *testing.T) {
	for in, want := range map[string]string{
		"connect postgres://app:pw1@db:5432/x: refused":                   "connect postgres://***@db:5432/x: refused",
		"host=db user=app password=pw2 dbname=x: timeout":                 "host=db user=app password=*** dbname=x: timeout",
		`GET "https://s3/b/k?X-Amz-Credential=AK/1&X-Amz-Signature=ab12"`: `GET "https://s3/b/k?X-Amz-Credential=***&X-Amz-Signature=***"`,
		"stage inbox/p1/metered-data/a.csv: database is locked":           "stage inbox/p1/metered-data/a.csv: database is locked",
	} {
		if got := errorText(errors.New(in)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", in, got, want)
		}
	}
	long := errorText(errors.New(strings.Repeat("ä", maxErrorText)))
	if !utf8.ValidString(long) || len(long) > maxErrorText+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("long error cut to %d bytes, valid %v", len(long), utf8.ValidString(long))
	}
}
