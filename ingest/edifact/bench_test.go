package edifact

import (
	"fmt"
	"strings"
	"testing"
)

// utilmdInterchange builds a realistic large interchange: n UTILMD messages
// (activation of a MaBiS series, 15 segments each, as in the sample file)
// in one UNB..UNZ, about 340 bytes per message.
func utilmdInterchange(n int) []byte {
	var b strings.Builder
	b.WriteString("UNA:+.? 'UNB+UNOC:3+9907248000001:500+9900000000003:500+260814:0600+UM0000000777'")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "UNH+UM%d+UTILMD:D:11A:UN:S2.1'BGM+Z07+UM-2026-0777-%d'DTM+137:202608140600?+00:303'"+
			"NAD+MS+9907248000001::293'NAD+MR+9900000000003::293'IDE+24+UM0777%06d'DTM+158:202608312200?+00:303'"+
			"RFF+Z13:55062'SEQ+Z22'CCI+Z20++11YR000000000123'CCI+Z19++11XACME-ENERGIEZ'CCI+15++Z21'CAV+SLS'"+
			"NAD+VY+9900000000003::293'UNT+15+UM%d'", i, i, i, i)
	}
	fmt.Fprintf(&b, "UNZ+%d+UM0000000777'", n)
	return []byte(b.String())
}

func TestBenchmarkInterchangeParses(t *testing.T) {
	ic, err := Parse(utilmdInterchange(50))
	if err != nil {
		t.Fatal(err)
	}
	if len(ic.Messages) != 50 || ic.Messages[49].Ref != "UM50" || ic.Messages[49].ProcessID != "55062" {
		t.Fatalf("unexpected parse: %d messages", len(ic.Messages))
	}
}

// BenchmarkParse reports MB/s (b.SetBytes) for a 1 MB interchange of 3,000
// UTILMD messages and for the typical small file, an APERAK.
func BenchmarkParse(b *testing.B) {
	cases := []struct {
		name string
		data []byte
	}{
		{"utilmd-3000-messages", utilmdInterchange(3000)},
		{"aperak-313", readFile(b, "aperak_313.edi")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
