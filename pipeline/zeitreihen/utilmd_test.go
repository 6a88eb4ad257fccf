package zeitreihen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

const (
	dso   = "9907248000001"
	area  = "11YR000000000123"
	group = "11XACME-ENERGIEZ"
)

func day(s string) pipeline.Day {
	d, err := pipeline.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

func dayPtr(s string) *pipeline.Day { d := day(s); return &d }

func TestFromInterchangeSample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "ingest", "edifact", "testdata", "utilmd_two_messages.edi"))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := edifact.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	got, problems := zeitreihen.FromInterchange(ic)
	want := []zeitreihen.Activation{
		{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Bilanzkreis: group,
			Zeitreihentyp: zeitreihen.SLS, Aktion: zeitreihen.Aktivierung, GueltigAb: day("2026-09-01"), Referenz: "UM07770001"},
		{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Bilanzkreis: group,
			Zeitreihentyp: zeitreihen.TLS, Aktion: zeitreihen.Deaktivierung, GueltigAb: day("2026-10-01"), Referenz: "UM07770002"},
	}
	if len(problems) > 0 {
		t.Errorf("problems: %q", problems)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func utc(y int, mo time.Month, d, h int) time.Time { return time.Date(y, mo, d, h, 0, 0, 0, time.UTC) }

// message is a valid activation (55062) message; edit changes it.
func message(ref string, edit func(m *mako.Message)) mako.Message {
	m := mako.Message{
		Ref: ref, Type: "UTILMD", ProcessID: "55062",
		Parties: []mako.Party{{Qualifier: "MR", ID: "9900000000003"}, {Qualifier: "MS", ID: dso}},
		Series: []mako.SeriesInfo{{Transaction: "TX-" + ref, Start: utc(2026, 8, 31, 22), Area: area, Group: group,
			Family: "Z21", Type: "SLS"}},
	}
	if edit != nil {
		edit(&m)
	}
	return m
}

func TestFromInterchangeRules(t *testing.T) {
	bkv := zeitreihen.Activation{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Bilanzkreis: group,
		Zeitreihentyp: zeitreihen.SLS, Aktion: zeitreihen.Aktivierung, GueltigAb: day("2026-09-01"), Referenz: "TX-M1"}
	with := func(edit func(a *zeitreihen.Activation)) []zeitreihen.Activation {
		a := bkv
		edit(&a)
		return []zeitreihen.Activation{a}
	}
	tests := []struct {
		name     string
		sender   string
		edit     func(m *mako.Message)
		want     []zeitreihen.Activation
		problems []string
	}{
		{"activation", "", nil, []zeitreihen.Activation{bkv}, nil},
		{"LF-SZR family", "", func(m *mako.Message) { m.Series[0].Family = "Z20" },
			with(func(a *zeitreihen.Activation) { a.Marktrolle = zeitreihen.RoleLF }), nil},
		{"no family is BKV", "", func(m *mako.Message) { m.Series[0].Family = "" }, []zeitreihen.Activation{bkv}, nil},
		{"activation with an end; winter midnight is 23:00 UTC", "", func(m *mako.Message) { m.Series[0].End = utc(2026, 12, 31, 23) },
			with(func(a *zeitreihen.Activation) { a.GueltigBis = dayPtr("2027-01-01") }), nil},
		{"no transaction: the message ref", "", func(m *mako.Message) { m.Series[0].Transaction = "" },
			with(func(a *zeitreihen.Activation) { a.Referenz = "M1" }), nil},
		{"no NAD+MS: the interchange sender", "9900000000777", func(m *mako.Message) { m.Parties = m.Parties[:1] },
			with(func(a *zeitreihen.Activation) { a.NetzbetreiberMPID = "9900000000777" }), nil},
		{"deactivation at the end", "", func(m *mako.Message) {
			m.ProcessID = "55063"
			m.Series[0].End = utc(2026, 10, 31, 23)
		}, with(func(a *zeitreihen.Activation) {
			a.Aktion, a.GueltigAb = zeitreihen.Deaktivierung, day("2026-11-01")
		}), nil},
		{"deactivation at the start when there is no end", "", func(m *mako.Message) { m.ProcessID = "55063" },
			with(func(a *zeitreihen.Activation) { a.Aktion = zeitreihen.Deaktivierung }), nil},
		{"other process ignored", "", func(m *mako.Message) { m.ProcessID = "55064" }, nil, nil},
		{"the transaction's process overrides the message's", "", func(m *mako.Message) { m.ProcessID, m.Series[0].ProcessID = "55071", "55063" },
			with(func(a *zeitreihen.Activation) { a.Aktion = zeitreihen.Deaktivierung }), nil},
		{"a transaction of another process ignored", "", func(m *mako.Message) { m.Series[0].ProcessID = "55071" }, nil, nil},
		{"other message type ignored", "", func(m *mako.Message) { m.Type = "MSCONS" }, nil, nil},

		{"no series segments", "", func(m *mako.Message) { m.Series = nil }, nil, []string{
			"message M1: no balancing area (CCI+Z20); no balancing group (CCI+Z19); no series type (CAV); no start of the activation (DTM+158)"}},
		{"no series type", "", func(m *mako.Message) { m.Series[0].Type = "" }, nil, []string{"message M1, transaction TX-M1: no series type (CAV)"}},
		{"a transaction without IDE is named by its position", "", func(m *mako.Message) { m.Series[0].Transaction, m.Series[0].Type = "", "" }, nil,
			[]string{"message M1, transaction #1: no series type (CAV)"}},
		{"unknown series type", "", func(m *mako.Message) { m.Series[0].Type = "XYZ" }, nil, []string{`message M1, transaction TX-M1: unknown series type "XYZ" (CAV)`}},
		{"area and group swapped", "", func(m *mako.Message) { m.Series[0].Area, m.Series[0].Group = group, area }, nil, []string{
			`message M1, transaction TX-M1: balancing area "11XACME-ENERGIEZ" (CCI+Z20) is no EIC of type Y; balancing group "11YR000000000123" (CCI+Z19) is no EIC of type X`}},
		{"activation without a start", "", func(m *mako.Message) { m.Series[0].Start = time.Time{} }, nil,
			[]string{"message M1, transaction TX-M1: no start of the activation (DTM+158)"}},
		{"activation ending on its first day", "", func(m *mako.Message) { m.Series[0].End = utc(2026, 9, 1, 10) }, nil,
			[]string{"message M1, transaction TX-M1: end 2026-09-01 (DTM+159) is not after start 2026-09-01 (DTM+158)"}},
		{"deactivation without a date", "", func(m *mako.Message) { m.ProcessID, m.Series[0].Start = "55063", time.Time{} }, nil,
			[]string{"message M1, transaction TX-M1: no date of the deactivation (DTM+159 or DTM+158)"}},
		{"bad NAD+MS", "", func(m *mako.Message) { m.Parties[1].ID = "4012345000023X" }, nil,
			[]string{`message M1, transaction TX-M1: sender "4012345000023X" (NAD+MS) is no 13-digit market-partner id`}},
		{"no DSO at all", "DSO-GLN", func(m *mako.Message) { m.Parties = nil }, nil,
			[]string{"message M1, transaction TX-M1: no DSO: no NAD+MS and the interchange sender is no 13-digit market-partner id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sender := tc.sender
			if sender == "" {
				sender = dso
			}
			ic := &mako.Interchange{Sender: sender, Messages: []mako.Message{message("M1", tc.edit)}}
			got, problems := zeitreihen.FromInterchange(ic)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if strings.Join(problems, "\n") != strings.Join(tc.problems, "\n") {
				t.Errorf("problems %q\nwant     %q", problems, tc.problems)
			}
		})
	}
}

// One broken message costs only itself: the others of the file are read.
func TestFromInterchangeKeepsTheGoodMessages(t *testing.T) {
	ic := &mako.Interchange{Sender: dso, Messages: []mako.Message{
		message("M1", nil),
		message("M2", func(m *mako.Message) { m.Series[0].Type = "" }),
		{Ref: "M3", Type: "APERAK"},
		message("M4", func(m *mako.Message) { m.Series[0].Type = "TLS" }),
	}}
	got, problems := zeitreihen.FromInterchange(ic)
	if len(got) != 2 || got[0].Referenz != "TX-M1" || got[1].Referenz != "TX-M4" || got[1].Zeitreihentyp != zeitreihen.TLS {
		t.Errorf("got %+v", got)
	}
	if len(problems) != 1 || problems[0] != "message M2, transaction TX-M2: no series type (CAV)" {
		t.Errorf("problems %q", problems)
	}
}

// interchange wraps the segments between UNH and UNT into one UTILMD message
// M1 from the DSO.
func interchange(body string) []byte {
	body = "BGM+Z07+DOC1'NAD+MS+" + dso + "::293'" + body
	return []byte(fmt.Sprintf("UNA:+.? 'UNB+UNOC:3+%s:500+9900000000003:500+260814:0600+IC1'UNH+M1+UTILMD:D:11A:UN:S2.1'%sUNT+%d+M1'UNZ+1+IC1'",
		dso, body, strings.Count(body, "'")+2))
}

// Every transaction of a message is a record of its own, with its own
// process, dates, type and reference; a broken one costs only itself.
func TestFromInterchangeTransactions(t *testing.T) {
	const (
		seg = "CCI+Z20++" + area + "'CCI+Z19++" + group + "'CCI+15++Z21'"
		tx1 = "IDE+24+TX1'DTM+158:202608312200?+00:303'RFF+Z13:55062'" + seg + "CAV+SLS'"
		tx2 = "IDE+24+TX2'DTM+159:202610312300?+00:303'RFF+Z13:55063'" + seg + "CAV+TLS'"
		zuo = "IDE+24+TX0'DTM+158:202607312200?+00:303'RFF+Z13:55071'" + seg + "CAV+LGS'"
	)
	act := zeitreihen.Activation{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Bilanzkreis: group,
		Zeitreihentyp: zeitreihen.SLS, Aktion: zeitreihen.Aktivierung, GueltigAb: day("2026-09-01"), Referenz: "TX1"}
	deact := zeitreihen.Activation{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: dso, Bilanzierungsgebiet: area, Bilanzkreis: group,
		Zeitreihentyp: zeitreihen.TLS, Aktion: zeitreihen.Deaktivierung, GueltigAb: day("2026-11-01"), Referenz: "TX2"}
	tests := []struct {
		name     string
		body     string
		want     []zeitreihen.Activation
		problems []string
	}{
		{"an activation and a deactivation", tx1 + tx2, []zeitreihen.Activation{act, deact}, nil},
		{"a Zuordnungsermaechtigung before an activation", zuo + tx1, []zeitreihen.Activation{act}, nil},
		{"a broken transaction after a good one", tx1 + strings.Replace(tx2, "CAV+TLS'", "", 1), []zeitreihen.Activation{act},
			[]string{"message M1, transaction TX2: no series type (CAV)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := edifact.Parse(interchange(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, problems := zeitreihen.FromInterchange(ic)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if strings.Join(problems, "\n") != strings.Join(tc.problems, "\n") {
				t.Errorf("problems %q\nwant     %q", problems, tc.problems)
			}
		})
	}
}
