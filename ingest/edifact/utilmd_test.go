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
	want := [][]mako.SeriesInfo{
		{{Transaction: "UM07770001", ProcessID: "55062", Start: utc(2026, 8, 31, 22, 0), Area: "11YR000000000123", Group: "11XACME-ENERGIEZ", Family: "Z21", Type: "SLS"}},
		{{Transaction: "UM07770002", ProcessID: "55063", End: utc(2026, 9, 30, 22, 0), Area: "11YR000000000123", Group: "11XACME-ENERGIEZ", Family: "Z21", Type: "TLS"}},
	}
	if len(ic.Messages) != len(want) {
		t.Fatalf("%d messages", len(ic.Messages))
	}
	for i, m := range ic.Messages {
		if !reflect.DeepEqual(m.Series, want[i]) {
			t.Errorf("message %s: Series = %+v, want %+v", m.Ref, m.Series, want[i])
		}
		// The messages share a slab: an append to one must not reach
		// into the next.
		if cap(m.Series) != len(m.Series) {
			t.Errorf("message %s: Series has capacity %d for %d entries", m.Ref, cap(m.Series), len(m.Series))
		}
	}
	if &ic.Messages[0].Series[0] == &ic.Messages[1].Series[0] {
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
	const tx = "IDE+24+TX1'DTM+158:202612312300?+00:303'RFF+Z13:55062'CCI+Z20++11YR000000000123'CCI+Z19++11XACME-ENERGIEZ'CCI+15++Z20'CAV+LGS'"
	tx1 := mako.SeriesInfo{Transaction: "TX1", ProcessID: "55062", Start: utc(2026, 12, 31, 23, 0),
		Area: "11YR000000000123", Group: "11XACME-ENERGIEZ", Family: "Z20", Type: "LGS"}
	tests := []struct {
		name string
		body string
		want []mako.SeriesInfo
	}{
		{"all segments, LF-SZR", tx, []mako.SeriesInfo{tx1}},
		{"start and end, offset +01", "RFF+Z13:55063'DTM+158:202701010000?+01:303'DTM+159:202702010000?+01:303'",
			[]mako.SeriesInfo{{ProcessID: "55063", Start: utc(2026, 12, 31, 23, 0), End: utc(2027, 1, 31, 23, 0)}}},
		{"only the series type", "RFF+Z13:55063'CAV+TLS'", []mako.SeriesInfo{{ProcessID: "55063", Type: "TLS"}}},
		// A transaction without RFF+Z13 takes the message's process.
		{"a second transaction is an entry of its own", tx + "IDE+24+TX2'DTM+158:202701312300?+00:303'CCI+Z20++11YR000000000999'CAV+SLS'",
			[]mako.SeriesInfo{tx1, {Transaction: "TX2", Start: utc(2027, 1, 31, 23, 0), Area: "11YR000000000999", Type: "SLS"}}},
		{"activation and deactivation in one message",
			tx + "IDE+24+TX2'DTM+159:202703312200?+00:303'RFF+Z13:55063'CCI+Z20++11YR000000000999'CCI+Z19++11XOTHER-GROUP01'CCI+15++Z21'CAV+TLS'",
			[]mako.SeriesInfo{tx1, {Transaction: "TX2", ProcessID: "55063", End: utc(2027, 3, 31, 22, 0),
				Area: "11YR000000000999", Group: "11XOTHER-GROUP01", Family: "Z21", Type: "TLS"}}},
		{"a 55071 transaction is dropped, the 55062 one kept",
			"IDE+24+TX0'DTM+158:202611302300?+00:303'RFF+Z13:55071'CCI+Z20++11YR000000000999'CAV+SLS'" + tx,
			[]mako.SeriesInfo{tx1}},
		{"segments before the first IDE are a transaction of their own", "CAV+SLS'RFF+Z13:55062'IDE+24+TX2'RFF+Z13:55063'CAV+TLS'",
			[]mako.SeriesInfo{{ProcessID: "55062", Type: "SLS"}, {Transaction: "TX2", ProcessID: "55063", Type: "TLS"}}},
		// RFF+Z13 alone before the first IDE is the message's process, not
		// a transaction.
		{"a message-level process applies to every transaction", "RFF+Z13:55063'IDE+24+TX1'CAV+SLS'IDE+24+TX2'CAV+TLS'",
			[]mako.SeriesInfo{{Transaction: "TX1", Type: "SLS"}, {Transaction: "TX2", Type: "TLS"}}},
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

// The message keeps the first RFF+Z13 as its process id, even when that
// transaction is dropped: the stream views classify messages by it.
func TestParseUTILMDMixedProcesses(t *testing.T) {
	ic, err := Parse(utilmd("IDE+24+TX1'RFF+Z13:55071'CAV+SLS'IDE+24+TX2'DTM+158:202612312300?+00:303'RFF+Z13:55062'CAV+TLS'"))
	if err != nil {
		t.Fatal(err)
	}
	m := ic.Messages[0]
	want := []mako.SeriesInfo{{Transaction: "TX2", ProcessID: "55062", Start: utc(2026, 12, 31, 23, 0), Type: "TLS"}}
	if m.ProcessID != "55071" || !reflect.DeepEqual(m.Series, want) {
		t.Errorf("ProcessID %q, Series %+v", m.ProcessID, m.Series)
	}
}

func TestParseUTILMDSeriesBadDates(t *testing.T) {
	tests := []struct{ body, want string }{
		{"RFF+Z13:55062'DTM+158:20261231?+00:303'", `segment 4 (DTM): DTM+158: value "20261231+00" does not match format 303`},
		{"RFF+Z13:55063'DTM+159:202613010000?+00:303'", `segment 4 (DTM): DTM+159: 2026-13-01 00:00:00 is no valid date and time`},
		{"RFF+Z13:55063'DTM+159:202612010000:999'", `segment 4 (DTM): DTM+159: unsupported date format code "999"`},
		// The second transaction is kept, so its date counts although the
		// first one, which is dropped, is fine.
		{"IDE+24+TX1'DTM+158:202612312300?+00:303'RFF+Z13:55071'IDE+24+TX2'DTM+159:garbage:303'RFF+Z13:55062'",
			`segment 7 (DTM): DTM+159: value "garbage" does not match format 303`},
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
	// In other messages, processes and transactions the dates are not
	// used, so they cannot fail.
	for _, body := range []string{"type:MSCONS:D:04B:UN:2.4c'DTM+158:garbage:303'", "DTM+158:garbage:303'RFF+Z13:55071'", "DTM+159:2026:102'",
		"IDE+24+TX1'DTM+158:garbage:303'RFF+Z13:55071'IDE+24+TX2'DTM+158:202612312300?+00:303'RFF+Z13:55062'CAV+SLS'"} {
		if _, err := Parse(utilmd(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	// The dropped transaction's bad date leaves the kept one intact.
	ic, err := Parse(utilmd("IDE+24+TX1'DTM+158:garbage:303'RFF+Z13:55071'IDE+24+TX2'DTM+158:202612312300?+00:303'RFF+Z13:55062'CAV+SLS'"))
	want := []mako.SeriesInfo{{Transaction: "TX2", ProcessID: "55062", Start: utc(2026, 12, 31, 23, 0), Type: "SLS"}}
	if err != nil || !reflect.DeepEqual(ic.Messages[0].Series, want) {
		t.Errorf("bad date in a dropped transaction: err %v", err)
	}
}

// utilmdTransactions is utilmdInterchange with k transactions (activations)
// in each of the n messages.
func utilmdTransactions(n, k int) []byte {
	var b strings.Builder
	b.WriteString("UNA:+.? 'UNB+UNOC:3+9907248000001:500+9900000000003:500+260814:0600+UM0000000777'")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "UNH+UM%d+UTILMD:D:11A:UN:S2.1'BGM+Z07+UM-2026-0777-%d'DTM+137:202608140600?+00:303'"+
			"NAD+MS+9907248000001::293'NAD+MR+9900000000003::293'", i, i)
		for j := 1; j <= k; j++ {
			fmt.Fprintf(&b, "IDE+24+UM0777%06d'DTM+158:202608312200?+00:303'RFF+Z13:55062'SEQ+Z22'"+
				"CCI+Z20++11YR000000000123'CCI+Z19++11XACME-ENERGIEZ'CCI+15++Z21'CAV+SLS'", (i-1)*k+j)
		}
		fmt.Fprintf(&b, "UNT+%d+UM%d'", 6+8*k, i)
	}
	fmt.Fprintf(&b, "UNZ+%d+UM0000000777'", n)
	return []byte(b.String())
}

// A file of many activations takes their SeriesInfo from a few slabs, not
// one allocation each, whether they come one or several to a message.
func TestParseUTILMDSeriesAllocations(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		k    int // transactions per message
	}{
		{"640 messages of one transaction", utilmdInterchange(640), 1},
		{"160 messages of four transactions", utilmdTransactions(160, 4), 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := Parse(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			txs := 0
			for i, m := range ic.Messages {
				if len(m.Series) != tc.k {
					t.Fatalf("message %d: %d transactions, want %d", i, len(m.Series), tc.k)
				}
				for j, s := range m.Series {
					if s.Transaction != fmt.Sprintf("UM0777%06d", i*tc.k+j+1) || s.Type != "SLS" || s.ProcessID != "55062" {
						t.Fatalf("message %d, transaction %d: %+v", i, j, s)
					}
					txs++
				}
			}
			withSeries := testing.AllocsPerRun(5, func() { _, _ = Parse(tc.data) })
			// The same file without the series segments. The series may cost
			// the slabs, the distinct transaction strings (one each) and the
			// growth of the parser's transaction buffer, but nothing per
			// segment (five per transaction).
			plain := []byte(strings.NewReplacer("IDE+24", "IDE+99", "DTM+158", "DTM+999", "CCI+", "XXX+", "CAV+", "XXX+").Replace(string(tc.data)))
			without := testing.AllocsPerRun(5, func() { _, _ = Parse(plain) })
			extra := withSeries - without
			t.Logf("%.0f allocations for %d transactions", extra, txs)
			if extra > float64(txs)*1.1 {
				t.Errorf("the series cost %.0f allocations for %d transactions", extra, txs)
			}
		})
	}
}
