package edifact

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

func TestParseUTILMDSeries(t *testing.T) {
	ic, err := Parse(readFile(t, "utilmd_two_messages.edi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []*mako.SeriesInfo{
		{Transaction: "UM07770001", Start: utc(2026, 8, 31, 22, 0), Area: "11YR000000000123", Group: "11XACME-ENERGIE1", Family: "Z21", Type: "SLS"},
		{Transaction: "UM07770002", End: utc(2026, 9, 30, 22, 0), Area: "11YR000000000123", Group: "11XACME-ENERGIE1", Family: "Z21", Type: "TLS"},
	}
	if len(ic.Messages) != len(want) {
		t.Fatalf("%d messages", len(ic.Messages))
	}
	for i, m := range ic.Messages {
		if !reflect.DeepEqual(m.Series, want[i]) {
			t.Errorf("message %s: Series = %+v, want %+v", m.Ref, m.Series, want[i])
		}
	}
	if ic.Messages[0].Series == ic.Messages[1].Series {
		t.Error("the two messages share one SeriesInfo")
	}
}

// utilmd wraps message bodies (the segments between UNH and UNT) into an
// interchange of UTILMD messages, or of the type given by a body's "type:"
// prefix.
func utilmd(bodies ...string) []byte {
	var b strings.Builder
	b.WriteString("UNA:+.? 'UNB+UNOC:3+9907248000001:500+9900000000003:500+260814:0600+IC1'")
	for i, body := range bodies {
		typ := "UTILMD:D:11A:UN:S2.1"
		if t, rest, ok := strings.Cut(body, "type:"); ok && t == "" {
			typ, body, _ = strings.Cut(rest, "'")
		}
		segs := strings.Count(body, "'") + 2
		fmt.Fprintf(&b, "UNH+M%d+%s'%sUNT+%d+M%d'", i+1, typ, body, segs, i+1)
	}
	fmt.Fprintf(&b, "UNZ+%d+IC1'", len(bodies))
	return []byte(b.String())
}

func TestParseUTILMDSeriesVariants(t *testing.T) {
	const tx = "IDE+24+TX1'DTM+158:202612312300?+00:303'RFF+Z13:55062'CCI+Z20++11YR000000000123'CCI+Z19++11XACME-ENERGIE1'CCI+15++Z20'CAV+LGS'"
	tests := []struct {
		name string
		body string
		want *mako.SeriesInfo
	}{
		{"all segments, LF-SZR", tx, &mako.SeriesInfo{Transaction: "TX1", Start: utc(2026, 12, 31, 23, 0),
			Area: "11YR000000000123", Group: "11XACME-ENERGIE1", Family: "Z20", Type: "LGS"}},
		{"start and end, offset +01", "RFF+Z13:55063'DTM+158:202701010000?+01:303'DTM+159:202702010000?+01:303'",
			&mako.SeriesInfo{Start: utc(2026, 12, 31, 23, 0), End: utc(2027, 1, 31, 23, 0)}},
		{"only the series type", "RFF+Z13:55063'CAV+TLS'", &mako.SeriesInfo{Type: "TLS"}},
		{"second transaction does not overwrite the first", tx + "IDE+24+TX2'DTM+158:202701312300?+00:303'CCI+Z20++11YR000000000999'CAV+SLS'",
			&mako.SeriesInfo{Transaction: "TX1", Start: utc(2026, 12, 31, 23, 0),
				Area: "11YR000000000123", Group: "11XACME-ENERGIE1", Family: "Z20", Type: "LGS"}},
		{"no series segments", "RFF+Z13:55062'NAD+MS+9907248000001::293'", nil},
		{"other CCI qualifiers and IDE types are ignored", "RFF+Z13:55062'IDE+Z01+X'CCI+Z30++Z07'CCI+++ZC0'DTM+157:202612312300?+00:303'", nil},
		// A Zuordnungsermaechtigung (55071) has the same segments; only
		// activations and deactivations keep them.
		{"other process", "IDE+24+TX1'DTM+158:202612312300?+00:303'RFF+Z13:55071'CCI+Z20++11YR000000000123'CAV+SLS'", nil},
		{"no process", "IDE+24+TX1'CAV+SLS'", nil},
		{"not UTILMD", "type:MSCONS:D:04B:UN:2.4c'RFF+Z13:55062'IDE+24+TX1'DTM+158:202612312300?+00:303'CCI+Z20++11YR000000000123'CAV+SLS'", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := Parse(utilmd(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := ic.Messages[0].Series; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Series = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseUTILMDSeriesBadDates(t *testing.T) {
	tests := []struct{ body, want string }{
		{"RFF+Z13:55062'DTM+158:20261231?+00:303'", `segment 4 (DTM): DTM+158: value "20261231+00" does not match format 303`},
		{"RFF+Z13:55063'DTM+159:202613010000?+00:303'", `segment 4 (DTM): DTM+159: 2026-13-01 00:00:00 is no valid date and time`},
		{"RFF+Z13:55063'DTM+159:202612010000:999'", `segment 4 (DTM): DTM+159: unsupported date format code "999"`},
	}
	for _, tc := range tests {
		_, err := Parse(utilmd(tc.body))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %s", tc.body, err, tc.want)
		}
		if pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("%s: kind %v", tc.body, pipeline.KindOf(err))
		}
	}
	// The error waits for the message's end: RFF+Z13 may come after it.
	const late = "DTM+158:garbage:303'RFF+Z13:55062'"
	if _, err := Parse(utilmd(late)); err == nil || err.Error() != `segment 3 (DTM): DTM+158: value "garbage" does not match format 303` {
		t.Errorf("RFF+Z13 after the bad date: err = %v", err)
	}
	// In other messages and processes the dates are not used, so they
	// cannot fail.
	for _, body := range []string{"type:MSCONS:D:04B:UN:2.4c'DTM+158:garbage:303'", "DTM+158:garbage:303'RFF+Z13:55071'", "DTM+159:2026:102'"} {
		if _, err := Parse(utilmd(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// A file of many activations takes their SeriesInfo from a few slabs, not
// one allocation each.
func TestParseUTILMDSeriesAllocations(t *testing.T) {
	data := utilmdInterchange(640)
	ic, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ic.Messages {
		if m.Series == nil || m.Series.Transaction != fmt.Sprintf("UM0777%06d", i+1) || m.Series.Type != "SLS" {
			t.Fatalf("message %d: Series = %+v", i, m.Series)
		}
	}
	withSeries := testing.AllocsPerRun(5, func() { _, _ = Parse(data) })
	// The same file without the series segments. The series may cost the
	// ten slabs, the 640 distinct transaction strings and the growth of the
	// table that interns them, but nothing per segment (five per message).
	plain := []byte(strings.NewReplacer("IDE+24", "IDE+99", "DTM+158", "DTM+999", "CCI+", "XXX+", "CAV+", "XXX+").Replace(string(data)))
	without := testing.AllocsPerRun(5, func() { _, _ = Parse(plain) })
	if extra := withSeries - without; extra > 640*1.1 {
		t.Errorf("the series cost %.0f allocations for 640 messages", extra)
	}
}
