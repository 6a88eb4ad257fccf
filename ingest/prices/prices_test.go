package prices

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

func TestParse(t *testing.T) {
	smard := readFile(t, "smard_2026-10-25_qh.json")
	rebap := readFile(t, "rebap_cet_cest.csv")
	tests := []struct {
		name   string
		kind   price.Kind
		data   []byte
		format string
		want   []wantProblem
	}{
		{"spot reads SMARD JSON", price.Spot, smard, "smard-json", nil},
		{"rebap reads the CSV", price.ReBAP, rebap, "netztransparenz-csv", nil},
		{"JSON after a BOM and blank lines is JSON", price.Spot, append([]byte("\xef\xbb\xbf \r\n\t"), smard...), "smard-json", nil},
		{"spot given the CSV", price.Spot, rebap, "", []wantProblem{{"wrong_format", "body",
			"a spot price file must be SMARD chart JSON"}}},
		{"rebap given SMARD JSON", price.ReBAP, append([]byte("\n  "), smard...), "", []wantProblem{{"wrong_format", "body",
			"a rebap price file must be a netztransparenz reBAP CSV export"}}},
		{"spot given nothing", price.Spot, []byte("  \n"), "", []wantProblem{{"too_short", "body", "the file is empty"}}},
		{"rebap given nothing", price.ReBAP, nil, "", []wantProblem{{"too_short", "body", "the file is empty"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.kind, tt.data)
			if tt.want != nil {
				checkProblems(t, err, tt.want...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != tt.kind || s.Format != tt.format || len(s.Points) == 0 {
				t.Errorf("kind %q format %q, %d points", s.Kind, s.Format, len(s.Points))
			}
		})
	}
}

func TestParseUnknownKind(t *testing.T) {
	_, err := Parse("intraday", []byte("{}"))
	if pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("err %v, want an invalid-kind error", err)
	}
}
