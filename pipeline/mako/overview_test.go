package mako

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// at parses an RFC 3339 time for fixtures.
func at(s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return v
}

// The overview tests run at Wednesday 2026-11-25 10:00 Berlin with a window
// of 30 days, which starts at 2026-10-26T09:00:00Z.
var (
	ovNow  = at("2026-11-25T09:00:00Z")
	ovTage = 30
)

// msg builds a stored message; answered is "" for none.
func msg(dir Direction, typ, pid, ref, sent string, v Verdict, answered string) StoredMessage {
	m := StoredMessage{Direction: dir, Type: typ, ProcessID: pid, InterchangeRef: ref, At: at(sent), Verdict: v}
	if answered != "" {
		m.AnsweredAt = at(answered)
	}
	return m
}

func contact(channel, when, what string) *Contact {
	return &Contact{At: at(when), Channel: channel, Direction: In, What: what}
}

func latest(kv ...any) map[Stream]StoredMessage {
	m := map[Stream]StoredMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(Stream)] = kv[i+1].(StoredMessage)
	}
	return m
}

// Recurring facts.
var (
	partinAccepted = msg(Out, "PARTIN", "37000", "SB1", "2026-11-20T09:00:00Z", Accepted, "2026-11-20T10:00:00Z")
	aperakAccepted = msg(In, "APERAK", "", "NB1", "2026-11-20T10:00:00Z", Accepted, "")
	partinTheirs   = msg(In, "PARTIN", "37001", "NB2", "2026-11-03T08:00:00Z", VerdictNone, "")
	zeSent         = msg(Out, "UTILMD", "55071", "SB2", "2026-11-02T08:00:00Z", VerdictNone, "")
)

const (
	reasonNoPartinOut = "Keine PARTIN an den Netzbetreiber gesendet"
	reasonNoAck       = "Keine Quittung (CONTRL/APERAK) des Netzbetreibers erhalten"
	reasonNoPartinIn  = "Keine PARTIN des Netzbetreibers erhalten"
	reasonNoZE        = "Keine Zuordnungsermächtigung an den Netzbetreiber gesendet"
)

var allOpen = []Stream{PartinOut, AckIn, PartinIn, ZuordnungOut}

func TestBuildOverviewRow(t *testing.T) {
	tests := []struct {
		name    string
		now     time.Time // zero: ovNow
		facts   PartnerFacts
		states  [4]State // partin_out, ack_in, partin_in, zuordnungsermaechtigung_out
		status  Status
		open    []Stream
		reasons []string
	}{
		{
			name:    "nothing at all is grey",
			states:  [4]State{StateMissing, StateMissing, StateMissing, StateMissing},
			status:  Grey,
			open:    allOpen,
			reasons: []string{"Keine Nachricht und kein Kontakt in den letzten 30 Tagen"},
		},
		{
			name: "green: PARTIN accepted, APERAK accepted, theirs received, Zuordnungsermaechtigung unanswered for weeks",
			facts: PartnerFacts{Latest: latest(PartinOut, partinAccepted, AckIn, aperakAccepted,
				PartinIn, partinTheirs, ZuordnungOut, zeSent)},
			states:  [4]State{StateAccepted, StateAccepted, StateReceived, StateSent},
			status:  Green,
			open:    []Stream{},
			reasons: []string{"PARTIN an den Netzbetreiber bestätigt, PARTIN des Netzbetreibers erhalten, Zuordnungsermächtigung gesendet"},
		},
		{
			name: "green without an acknowledgment of the partner's own id, Zuordnungsermaechtigung accepted",
			facts: PartnerFacts{Latest: latest(PartinOut, partinAccepted, PartinIn, partinTheirs,
				ZuordnungOut, msg(Out, "UTILMD", "55071", "SB2", "2026-11-02T08:00:00Z", Accepted, "2026-11-02T09:00:00Z"))},
			states:  [4]State{StateAccepted, StateMissing, StateReceived, StateAccepted},
			status:  Green,
			open:    []Stream{},
			reasons: []string{"PARTIN an den Netzbetreiber bestätigt, PARTIN des Netzbetreibers erhalten, Zuordnungsermächtigung bestätigt"},
		},
		{
			name: "red: PARTIN rejected by a CONTRL",
			facts: PartnerFacts{Latest: latest(
				PartinOut, msg(Out, "PARTIN", "37000", "SB1", "2026-11-20T09:00:00Z", Rejected, "2026-11-20T10:00:00Z"),
				AckIn, msg(In, "CONTRL", "", "NB1", "2026-11-20T10:00:00Z", Rejected, ""),
				ZuordnungOut, zeSent)},
			states: [4]State{StateRejected, StateRejected, StateMissing, StateSent},
			status: Red,
			open:   []Stream{PartinOut, AckIn, PartinIn},
			reasons: []string{
				"PARTIN 37000 an den Netzbetreiber abgelehnt am 2026-11-20",
				"Letzte Quittung des Netzbetreibers ist eine Ablehnung (CONTRL 4) vom 2026-11-20",
				reasonNoPartinIn,
			},
		},
		{
			name: "red: only the newest acknowledgment is a rejection",
			facts: PartnerFacts{Latest: latest(PartinOut, partinAccepted,
				AckIn, msg(In, "APERAK", "", "NB3", "2026-11-24T08:00:00Z", Rejected, ""),
				PartinIn, partinTheirs, ZuordnungOut, zeSent)},
			states:  [4]State{StateAccepted, StateRejected, StateReceived, StateSent},
			status:  Red,
			open:    []Stream{AckIn},
			reasons: []string{"Letzte Quittung des Netzbetreibers ist eine Ablehnung (APERAK 313) vom 2026-11-24"},
		},
		{
			name: "red: rejected Zuordnungsermaechtigung comes first, answer day in Berlin",
			facts: PartnerFacts{Latest: latest(
				PartinOut, msg(Out, "PARTIN", "37000", "SB5", "2026-11-24T15:00:00Z", VerdictNone, ""),
				ZuordnungOut, msg(Out, "UTILMD", "55071", "SB2", "2026-11-23T20:00:00Z", Rejected, "2026-11-23T23:30:00Z"))},
			states: [4]State{StateSent, StateMissing, StateMissing, StateRejected},
			status: Red,
			open:   allOpen,
			reasons: []string{
				"Zuordnungsermächtigung (UTILMD 55071) abgelehnt am 2026-11-24",
				"PARTIN 37000 vom 2026-11-24 gesendet, Antwort bis 2026-11-25 12:00 ausstehend",
				reasonNoAck,
				reasonNoPartinIn,
			},
		},
		{
			name: "yellow: PARTIN only received (CONTRL 8) and past its deadline",
			facts: PartnerFacts{Latest: latest(
				PartinOut, msg(Out, "PARTIN", "37000", "SB1", "2026-11-20T09:00:00Z", Received, "2026-11-20T09:05:00Z"),
				AckIn, msg(In, "CONTRL", "", "NB1", "2026-11-20T09:05:00Z", Received, ""))},
			states: [4]State{StateOverdue, StateReceived, StateMissing, StateMissing},
			status: Yellow,
			open:   []Stream{PartinOut, PartinIn, ZuordnungOut},
			reasons: []string{
				"PARTIN 37000 vom 2026-11-20 unbeantwortet, Antwortfrist 2026-11-23 12:00 verstrichen",
				reasonNoPartinIn,
				reasonNoZE,
			},
		},
		{
			name:    "yellow: a mail contact and no message",
			facts:   PartnerFacts{Mail: contact("mail", "2026-11-24T07:00:00Z", "AW: PARTIN")},
			states:  [4]State{StateMissing, StateMissing, StateMissing, StateMissing},
			status:  Yellow,
			open:    allOpen,
			reasons: []string{reasonNoPartinOut, reasonNoAck, reasonNoPartinIn, reasonNoZE},
		},
		{
			name: "window: exactly 30 days old counts, one second older does not",
			facts: PartnerFacts{
				Latest: latest(
					PartinIn, msg(In, "PARTIN", "37001", "NB2", "2026-10-26T09:00:00Z", VerdictNone, ""),
					PartinOut, msg(Out, "PARTIN", "37000", "SB1", "2026-10-26T08:59:59Z", Accepted, "2026-10-26T10:00:00Z")),
				Edi: contact("edifact", "2026-10-26T08:59:59Z", "PARTIN 37000 gesendet"),
			},
			states:  [4]State{StateMissing, StateMissing, StateReceived, StateMissing},
			status:  Yellow,
			open:    []Stream{PartinOut, AckIn, ZuordnungOut},
			reasons: []string{reasonNoPartinOut, reasonNoAck, reasonNoZE},
		},
		{
			name: "only messages and contacts older than the window is grey",
			facts: PartnerFacts{
				Latest: latest(PartinOut, msg(Out, "PARTIN", "37000", "SB1", "2026-10-01T09:00:00Z", Accepted, "2026-10-01T10:00:00Z")),
				Edi:    contact("edifact", "2026-10-01T10:00:00Z", "APERAK erhalten"),
				Mail:   contact("mail", "2026-09-01T10:00:00Z", "Hallo"),
			},
			states:  [4]State{StateMissing, StateMissing, StateMissing, StateMissing},
			status:  Grey,
			open:    allOpen,
			reasons: []string{"Keine Nachricht und kein Kontakt in den letzten 30 Tagen"},
		},
		{
			// Sent Tuesday 11:00 Berlin: due Wednesday 12:00 Berlin = 11:00Z.
			name:   "deadline: at the deadline itself the PARTIN is still only sent",
			now:    at("2026-11-25T11:00:00Z"),
			facts:  PartnerFacts{Latest: latest(PartinOut, msg(Out, "PARTIN", "37003", "SB9", "2026-11-24T10:00:00Z", VerdictNone, ""))},
			states: [4]State{StateSent, StateMissing, StateMissing, StateMissing},
			status: Yellow,
			open:   allOpen,
			reasons: []string{"PARTIN 37003 vom 2026-11-24 gesendet, Antwort bis 2026-11-25 12:00 ausstehend",
				reasonNoAck, reasonNoPartinIn, reasonNoZE},
		},
		{
			name:   "deadline: one second later it is overdue",
			now:    at("2026-11-25T11:00:01Z"),
			facts:  PartnerFacts{Latest: latest(PartinOut, msg(Out, "PARTIN", "37003", "SB9", "2026-11-24T10:00:00Z", VerdictNone, ""))},
			states: [4]State{StateOverdue, StateMissing, StateMissing, StateMissing},
			status: Yellow,
			open:   allOpen,
			reasons: []string{"PARTIN 37003 vom 2026-11-24 unbeantwortet, Antwortfrist 2026-11-25 12:00 verstrichen",
				reasonNoAck, reasonNoPartinIn, reasonNoZE},
		},
		{
			// The Zuordnungsermaechtigung has no business answer: four weeks
			// without one (window from 2026-12-11T09:00Z) leave it sent, and sent
			// counts as done.
			name: "Zuordnungsermaechtigung is never overdue",
			now:  at("2027-01-10T09:00:00Z"),
			facts: PartnerFacts{Latest: latest(
				ZuordnungOut, msg(Out, "UTILMD", "55071", "SB2", "2026-12-12T08:00:00Z", VerdictNone, ""))},
			states:  [4]State{StateMissing, StateMissing, StateMissing, StateSent},
			status:  Yellow,
			open:    []Stream{PartinOut, AckIn, PartinIn},
			reasons: []string{reasonNoPartinOut, reasonNoAck, reasonNoPartinIn},
		},
	}
	p := Partner{MPID: "9900000000017", Name: "Netz Test", ControlArea: "Amprion"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = ovNow
			}
			ov := BuildOverview([]Partner{p}, map[string]PartnerFacts{p.MPID: tt.facts}, OverviewOptions{Now: now, Tage: ovTage})
			row := onlyRow(t, ov)
			got := [4]State{row.PartinOut.State, row.AckIn.State, row.PartinIn.State, row.ZuordnungOut.State}
			if got != tt.states {
				t.Errorf("states = %v, want %v", got, tt.states)
			}
			if row.Status != tt.status {
				t.Errorf("status = %s, want %s", row.Status, tt.status)
			}
			if row.Open == nil || !slices.Equal(row.Open, tt.open) {
				t.Errorf("open = %#v, want %v", row.Open, tt.open)
			}
			if !slices.Equal(row.Reasons, tt.reasons) {
				t.Errorf("reasons =\n  %q\nwant\n  %q", row.Reasons, tt.reasons)
			}
		})
	}
}

func onlyRow(t *testing.T, ov Overview) OverviewRow {
	t.Helper()
	var rows []OverviewRow
	for _, g := range ov.Groups {
		rows = append(rows, g.Partners...)
	}
	if len(rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(rows))
	}
	return rows[0]
}

func TestBuildOverviewStreamCells(t *testing.T) {
	p := Partner{MPID: "9900000000017", Name: "Netz Test"}
	facts := PartnerFacts{Latest: latest(PartinOut, partinAccepted, AckIn, aperakAccepted, ZuordnungOut, zeSent)}
	row := onlyRow(t, BuildOverview([]Partner{p}, map[string]PartnerFacts{p.MPID: facts}, OverviewOptions{Now: ovNow, Tage: ovTage}))

	po := row.PartinOut
	if po.At == nil || !po.At.Equal(at("2026-11-20T09:00:00Z")) || po.Type != "PARTIN" || po.ProcessID != "37000" || po.Ref != "SB1" {
		t.Errorf("partin_out cell = %+v", po)
	}
	if po.AnsweredAt == nil || !po.AnsweredAt.Equal(at("2026-11-20T10:00:00Z")) {
		t.Errorf("partin_out answered = %v, want 2026-11-20T10:00:00Z", po.AnsweredAt)
	}
	if row.ZuordnungOut.AnsweredAt != nil {
		t.Errorf("unanswered Zuordnungsermaechtigung has beantwortet_at %v", row.ZuordnungOut.AnsweredAt)
	}
	if row.PartinIn.At != nil || row.PartinIn.Type != "" {
		t.Errorf("missing partin_in cell = %+v, want no time and no type", row.PartinIn)
	}
	// The cells must not alias the facts: changing the row leaves the
	// facts alone.
	*po.At = time.Time{}
	if facts.Latest[PartinOut].At.IsZero() {
		t.Error("row time aliases the facts")
	}

	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"partin_in":{"state":"fehlt","date":null}`, `"letzter_kontakt_at":null`, `"letzter_kontakt":null`, `"offen":["partin_in"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("row JSON %s lacks %s", b, want)
		}
	}
}

func TestBuildOverviewLetzterKontakt(t *testing.T) {
	tests := []struct {
		name     string
		edi      *Contact
		mail     *Contact
		wantAt   string // "" for nil
		wantText string
	}{
		{"none", nil, nil, "", ""},
		{"EDIFACT only", contact("edifact", "2026-11-24T10:00:00Z", "PARTIN 37001 erhalten"), nil,
			"2026-11-24T10:00:00Z", "EDIFACT: PARTIN 37001 erhalten"},
		{"mail newer by a second", contact("edifact", "2026-11-24T10:00:00Z", "PARTIN 37001 erhalten"),
			contact("mail", "2026-11-24T10:00:01Z", "E-Mail erhalten: AW: PARTIN"),
			"2026-11-24T10:00:01Z", "E-Mail: E-Mail erhalten: AW: PARTIN"},
		{"tie goes to EDIFACT", contact("edifact", "2026-11-24T10:00:00Z", "APERAK erhalten"),
			contact("mail", "2026-11-24T10:00:00Z", "Rückfrage"),
			"2026-11-24T10:00:00Z", "EDIFACT: APERAK erhalten"},
		{"newer EDIFACT outside the window cannot be: older one outside, mail inside",
			contact("edifact", "2026-10-20T10:00:00Z", "PARTIN 37000 gesendet"),
			contact("mail", "2026-11-01T10:00:00Z", "Rückfrage"),
			"2026-11-01T10:00:00Z", "E-Mail: Rückfrage"},
		{"empty description leaves the channel", nil, contact("mail", "2026-11-01T10:00:00Z", "  "),
			"2026-11-01T10:00:00Z", "E-Mail"},
	}
	p := Partner{MPID: "9900000000017", Name: "Netz Test"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			facts := map[string]PartnerFacts{p.MPID: {Edi: tt.edi, Mail: tt.mail}}
			row := onlyRow(t, BuildOverview([]Partner{p}, facts, OverviewOptions{Now: ovNow, Tage: ovTage}))
			if tt.wantAt == "" {
				if row.LetzterKontaktAt != nil || row.LetzterKontakt != nil {
					t.Errorf("kontakt = %v %v, want nil", row.LetzterKontaktAt, row.LetzterKontakt)
				}
				return
			}
			if row.LetzterKontaktAt == nil || !row.LetzterKontaktAt.Equal(at(tt.wantAt)) {
				t.Errorf("letzter_kontakt_at = %v, want %s", row.LetzterKontaktAt, tt.wantAt)
			}
			if row.LetzterKontakt == nil || *row.LetzterKontakt != tt.wantText {
				t.Errorf("letzter_kontakt = %v, want %q", row.LetzterKontakt, tt.wantText)
			}
		})
	}
}

// Facts that give each status.
var (
	factsRed   = PartnerFacts{Latest: latest(PartinOut, msg(Out, "PARTIN", "37000", "SB1", "2026-11-20T09:00:00Z", Rejected, "2026-11-20T10:00:00Z"))}
	factsGreen = PartnerFacts{Latest: latest(PartinOut, partinAccepted, AckIn, aperakAccepted, PartinIn, partinTheirs, ZuordnungOut, zeSent)}
)

func withContact(f PartnerFacts, edi, mail *Contact) PartnerFacts {
	f.Edi, f.Mail = edi, mail
	return f
}

func TestBuildOverviewOrdering(t *testing.T) {
	partners := []Partner{
		{MPID: "9900000000001", Name: "Stadtwerke Zwickau", ControlArea: "Amprion"},
		{MPID: "9900000000002", Name: "Überlandwerk Mitte", ControlArea: "Amprion"},
		{MPID: "9900000000003", Name: "Ärzte Netz", ControlArea: "Amprion"},
		{MPID: "9900000000004", Name: "stadtwerke Aachen", ControlArea: "Amprion"},
		{MPID: "9900000000005", Name: "Netz Bayern", ControlArea: "Amprion"},
		{MPID: "9900000000007", Name: "EWR Netz", ControlArea: "Amprion"},
		{MPID: "9900000000006", Name: "EWR Netz", ControlArea: "Amprion"},
		{MPID: "9900000000009", Name: "Verbund Netz", ControlArea: "Amprion"},
	}
	facts := map[string]PartnerFacts{
		"9900000000001": withContact(factsRed, contact("edifact", "2026-11-22T08:00:00Z", "CONTRL erhalten"), nil),
		"9900000000002": {Mail: contact("mail", "2026-11-24T10:00:00Z", "Frage")},
		"9900000000004": withContact(factsGreen, contact("edifact", "2026-11-20T10:00:00Z", "APERAK erhalten"), nil),
		"9900000000005": withContact(factsRed, nil, contact("mail", "2026-11-24T10:00:00Z", "Ablehnung")),
	}
	tests := []struct {
		ordnung string
		want    []string
	}{
		// Red first (Netz Bayern, Stadtwerke Zwickau), then by folded name:
		// arzte, ewr (06 before 07), stadtwerke aachen, uberlandwerk, verbund.
		{OrderStatus, []string{"9900000000005", "9900000000001", "9900000000003", "9900000000006", "9900000000007", "9900000000004", "9900000000002", "9900000000009"}},
		{"", []string{"9900000000005", "9900000000001", "9900000000003", "9900000000006", "9900000000007", "9900000000004", "9900000000002", "9900000000009"}},
		// Newest contact first, the 24.11. tie by name (netz bayern before
		// uberlandwerk), then 22.11., 20.11., then the rows without contact by name.
		{OrderKontakt, []string{"9900000000005", "9900000000002", "9900000000001", "9900000000004", "9900000000003", "9900000000006", "9900000000007", "9900000000009"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("ordnung=%q", tt.ordnung), func(t *testing.T) {
			ov := BuildOverview(partners, facts, OverviewOptions{Now: ovNow, Tage: ovTage, Ordnung: tt.ordnung})
			g := ov.Groups[1]
			if g.ControlArea != "Amprion" {
				t.Fatalf("group 1 = %s", g.ControlArea)
			}
			var got []string
			for _, r := range g.Partners {
				got = append(got, r.MPID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("order = %v\nwant    %v", got, tt.want)
			}
			wantCounts := map[Status]int{Red: 2, Yellow: 1, Green: 1, Grey: 4}
			if !mapsEqual(g.Counts, wantCounts) || !mapsEqual(ov.Counts, wantCounts) {
				t.Errorf("counts group %v overall %v, want %v", g.Counts, ov.Counts, wantCounts)
			}
			wantOrdnung := tt.ordnung
			if wantOrdnung == "" {
				wantOrdnung = OrderStatus
			}
			if ov.Ordnung != wantOrdnung || ov.Tage != ovTage || !ov.Stand.Equal(ovNow) {
				t.Errorf("header = %q %d %s", ov.Ordnung, ov.Tage, ov.Stand)
			}
		})
	}
}

func mapsEqual(a, b map[Status]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if got, ok := a[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func TestBuildOverviewGroups(t *testing.T) {
	partners := []Partner{
		{MPID: "9900000000101", Name: "Netz West", ControlArea: "Amprion"},
		{MPID: "9900000000102", Name: "Netz Nord", ControlArea: "TenneT TSO"},
		{MPID: "9900000000103", Name: "Netz Ost", ControlArea: "50hertz"},
		{MPID: "9900000000104", Name: "Netz Süd", ControlArea: "TransnetBW"},
		{MPID: "9900000000105", Name: "Netz Irgendwo", ControlArea: ""},
		{MPID: "9900000000106", Name: "Netz Ausland", ControlArea: "Elia"},
		{MPID: "9900000000107", Name: "Netz Mitte", ControlArea: " AMPRION "},
	}
	facts := map[string]PartnerFacts{
		"9900000000101": factsRed,
		"9900000000999": factsRed, // not in the registry: no row, not counted
	}
	ov := BuildOverview(partners, facts, OverviewOptions{Now: ovNow, Tage: ovTage})
	want := []struct {
		area  string
		mpids []string
	}{
		{"50Hertz", []string{"9900000000103"}},
		{"Amprion", []string{"9900000000101", "9900000000107"}},
		{"TenneT", []string{"9900000000102"}},
		{"TransnetBW", []string{"9900000000104"}},
		{"unbekannt", []string{"9900000000106", "9900000000105"}},
	}
	if len(ov.Groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(ov.Groups), len(want))
	}
	for i, w := range want {
		g := ov.Groups[i]
		var got []string
		for _, r := range g.Partners {
			got = append(got, r.MPID)
			if r.ControlArea != w.area {
				t.Errorf("row %s control_area = %q, want %q", r.MPID, r.ControlArea, w.area)
			}
		}
		if g.ControlArea != w.area || !slices.Equal(got, w.mpids) {
			t.Errorf("group %d = %s %v, want %s %v", i, g.ControlArea, got, w.area, w.mpids)
		}
	}
	if !mapsEqual(ov.Counts, map[Status]int{Red: 1, Yellow: 0, Green: 0, Grey: 6}) {
		t.Errorf("overall counts = %v", ov.Counts)
	}
	if !mapsEqual(ov.Groups[1].Counts, map[Status]int{Red: 1, Yellow: 0, Green: 0, Grey: 1}) {
		t.Errorf("Amprion counts = %v", ov.Groups[1].Counts)
	}

	// Without partners of unknown area there is no "unbekannt" group, and
	// the empty control areas are still there with zero counts and [].
	ov = BuildOverview(partners[:1], facts, OverviewOptions{Now: ovNow, Tage: ovTage})
	if len(ov.Groups) != 4 {
		t.Fatalf("%d groups, want the four control areas", len(ov.Groups))
	}
	b, err := json.Marshal(ov.Groups[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"control_area":"50Hertz","counts":{"green":0,"grey":0,"red":0,"yellow":0},"partners":[]}`; string(b) != want {
		t.Errorf("empty group JSON = %s, want %s", b, want)
	}
}

// benchOverviewInput is a registry of n partners spread over the control
// areas with a mix of facts: green, red, overdue, mail only and nothing.
func benchOverviewInput(n int) ([]Partner, map[string]PartnerFacts) {
	areas := []string{"50Hertz", "Amprion", "TenneT", "TransnetBW", ""}
	partners := make([]Partner, 0, n)
	facts := make(map[string]PartnerFacts, n)
	for i := range n {
		id := fmt.Sprintf("99%011d", i)
		partners = append(partners, Partner{MPID: id, Name: fmt.Sprintf("Stadtwerke Ölbach %d", (i*7919)%n), ControlArea: areas[i%len(areas)]})
		day := fmt.Sprintf("2026-11-%02dT%02d:00:00Z", 1+i%24, i%24)
		switch i % 5 {
		case 0:
			facts[id] = withContact(factsGreen, contact("edifact", day, "APERAK erhalten"), nil)
		case 1:
			facts[id] = withContact(factsRed, nil, contact("mail", day, "Ablehnung"))
		case 2:
			facts[id] = PartnerFacts{Latest: latest(PartinOut, msg(Out, "PARTIN", "37000", "SB", day, VerdictNone, ""))}
		case 3:
			facts[id] = PartnerFacts{Mail: contact("mail", day, "Frage")}
		}
	}
	return partners, facts
}

func BenchmarkBuildOverview(b *testing.B) {
	partners, facts := benchOverviewInput(900)
	for _, ordnung := range []string{OrderStatus, OrderKontakt} {
		b.Run(ordnung, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				BuildOverview(partners, facts, OverviewOptions{Now: ovNow, Tage: ovTage, Ordnung: ordnung})
			}
		})
	}
}
