package portal

import (
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestNewOperator(t *testing.T) {
	at := time.Date(2026, 11, 26, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		name, email, by string
		at              time.Time
		want            Operator // zero for a refusal
	}{
		{"normalised", " Anna.Schmidt@Firma.DE ", " cli ", at, Operator{Email: "anna.schmidt@firma.de", AddedAt: at.UTC(), AddedBy: "cli"}},
		{"display name", "Anna <anna@firma.de>", "cli", at, Operator{}},
		{"no address", "anna", "cli", at, Operator{}},
		{"no time", "anna@firma.de", "cli", time.Time{}, Operator{}},
		{"no author", "anna@firma.de", "  ", at, Operator{}},
	} {
		got, err := NewOperator(c.email, c.at, c.by)
		if c.want == (Operator{}) {
			if pipeline.KindOf(err) != pipeline.Invalid || got != (Operator{}) {
				t.Errorf("%s: %+v, %v; want an Invalid error", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want || got.AddedAt.Location() != time.UTC {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}
