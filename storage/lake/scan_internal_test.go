package lake

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"

	"github.com/schedbridge/schedbridge/pipeline"
)

// TestIndexRuns decodes hand-made RLE/bit-packed hybrid pages, including
// the cases the lake's writer does not produce.
func TestIndexRuns(t *testing.T) {
	bitPacked := func(vs ...byte) []byte { // width 2, one group of 8
		return []byte{3, vs[0] | vs[1]<<2 | vs[2]<<4 | vs[3]<<6, vs[4] | vs[5]<<2 | vs[6]<<4 | vs[7]<<6}
	}
	cases := []struct {
		name      string
		data      []byte
		n, row    int
		dictLen   int
		codes     string
		ends      string
		wantError bool
	}{
		{"rle then bit-packed with padding", append([]byte{2, 20, 2}, bitPacked(2, 1, 1, 3, 0, 0, 3, 3)...), 15, 0, 4,
			"[2 1 3 0]", "[11 13 14 15]", false},
		{"first row not 0", []byte{2, 8, 1}, 4, 100, 2, "[1]", "[104]", false},
		{"empty rle run", []byte{2, 0, 3, 8, 1}, 4, 0, 2, "[1]", "[4]", false},
		{"width 0 without runs", []byte{0}, 96, 0, 1, "[0]", "[96]", false},
		{"width 0 with a run", []byte{0, 192, 1}, 96, 0, 1, "[0]", "[96]", false},
		{"index beyond the dictionary", []byte{2, 8, 3}, 4, 0, 3, "", "", true},
		{"run ends early", []byte{2, 8}, 4, 0, 3, "", "", true},
		{"packed ends early", []byte{2, 3, 0}, 8, 0, 3, "", "", true},
		{"too few values", []byte{2, 4, 1}, 4, 0, 3, "", "", true},
		{"bad width", []byte{33, 4, 1}, 4, 0, 3, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out StringRuns
			err := indexRuns(parquet.Encodings.RLEDict, tc.data, tc.n, true, tc.dictLen, tc.row, &out)
			if tc.wantError {
				if pipeline.KindOf(err) != pipeline.Invalid {
					t.Fatalf("err = %v, want Invalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(out.Codes); got != tc.codes {
				t.Errorf("codes %s, want %s", got, tc.codes)
			}
			if got := fmt.Sprint(out.Ends); got != tc.ends {
				t.Errorf("ends %s, want %s", got, tc.ends)
			}
		})
	}
	if err := indexRuns(parquet.Encodings.Plain, []byte{2, 8, 1}, 4, true, 2, 0, &StringRuns{}); err != errNotDictionary {
		t.Errorf("plain page: %v, want errNotDictionary", err)
	}
}
