package mako

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	mpNord = "9900000000011"
	mpSued = "9900000000022"
	mpGone = "9900000000099" // an address of history, no longer in the registry
)

var (
	recPartners = map[string]Partner{
		mpNord: {MPID: mpNord, Name: "Netz Nord GmbH"},
		mpSued: {MPID: mpSued, Name: "Stadtwerke Süd"},
	}
	recEmails = map[string]string{
		"netzzugang@netz-nord.example": mpNord,
		"alt@removed.example":          mpGone,
	}
	recOverview = map[string]OverviewRow{
		mpNord: {MPID: mpNord, Open: []Stream{}},
		mpSued: {MPID: mpSued, Open: []Stream{PartinOut, PartinIn}},
	}

	// Our rejected PARTIN, and a newer message of theirs that happens to
	// carry the same interchange reference: ours is the better match.
	sbRejected = StoredMessage{ID: 10, Direction: Out, PartnerMPID: mpSued, Type: "PARTIN", ProcessID: "37000",
		InterchangeRef: "SB20261120001", MessageRef: "1", At: at("2026-11-20T09:00:00Z"), Stream: PartinOut,
		Verdict: Rejected, AnsweredAt: at("2026-11-20T10:00:00Z")}
	sbTheirs = StoredMessage{ID: 11, Direction: In, PartnerMPID: mpNord, Type: "PARTIN", ProcessID: "37001",
		InterchangeRef: "SB20261120001", MessageRef: "7", At: at("2026-11-21T08:00:00Z"), Stream: PartinIn}
	zeOpen = StoredMessage{ID: 20, Direction: Out, PartnerMPID: mpNord, Type: "UTILMD", ProcessID: "55071",
		InterchangeRef: "40001234", MessageRef: "MSG40001234-1", At: at("2026-11-20T09:15:00Z"), Stream: ZuordnungOut}
	partinOK = StoredMessage{ID: 30, Direction: Out, PartnerMPID: mpNord, Type: "PARTIN", ProcessID: "37003",
		InterchangeRef: "4711000815", MessageRef: "PARTIN-4711-1", At: at("2026-11-19T12:00:00Z"), Stream: PartinOut,
		Verdict: Accepted}

	recFound = map[string][]StoredMessage{
		"SB20261120001": {sbTheirs, sbRejected},
		"40001234":      {zeOpen},
		"MSG40001234-1": {zeOpen},
		"4711000815":    {partinOK},
		"PARTIN-4711-1": {partinOK},
	}
)

func fixtureMail(t *testing.T, file, from, date string) Mail {
	subject, body := readMail(t, file)
	return Mail{Source: "eml:" + file, Folder: "INBOX", Direction: In, Date: at(date), From: from, Subject: subject, Text: body}
}

func notFound(ref string) Citation {
	return Citation{Referenz: ref, BezugTyp: BezugNone, Verdict: VerdictUnknown}
}

func TestReconcile(t *testing.T) {
	replies := []Mail{
		fixtureMail(t, "aperak_ablehnung.txt", "mako@stadtwerke-musterstadt.de", "2026-11-21T09:30:00+01:00"),
		fixtureMail(t, "outlook_zitat.txt", "netzzugang@netz-nord.example", "2026-11-21T08:00:00Z"),
		fixtureMail(t, "englisch.txt", "alt@removed.example", "2026-11-20T16:00:00Z"),
		fixtureMail(t, "ohne_referenz.txt", "unbekannt@example.org", "2026-11-20T12:00:00Z"),
		{Folder: "Netzbetreiber", Direction: In, Date: at("2026-11-20T11:00:00Z"), From: "x@y.example",
			Subject: "Rückfrage", Text: "Bitte prüfen Sie Referenz XY-123."},
	}
	got := Reconcile(ReconcileInput{
		Now: at("2026-11-25T09:00:00Z"), Tage: 14, Replies: replies, Found: recFound,
		Partners: recPartners, EmailToMPID: recEmails, Overview: recOverview,
	})
	want := Reconciliation{LookbackDays: 14, Antworten: []Reply{
		{
			Folder: "INBOX", Date: "2026-11-21T08:30:00Z", Sender: "mako@stadtwerke-musterstadt.de",
			Subject: "AW: PARTIN Stadtwerke Musterstadt – Ablehnung",
			// Z29 and 1234567 are bare and not found: not listed.
			Zitiert: []Citation{{Referenz: "SB20261120001", Gefunden: true, Richtung: "ausgehend", EDIType: "PARTIN 37000",
				Date: "2026-11-20T09:00:00Z", Bezug: "SB20261120001/1", BezugTyp: BezugInterchange, Verdict: Rejected}},
			Bewertung: BewertungAbgelehnt,
			// Unknown sender, no MP-ID in the text: the partner of the found message.
			MPID: mpSued, Name: "Stadtwerke Süd", Offen: []string{"partin_out", "partin_in"},
			Text: "Sehr geehrte Damen und Herren, Ihre PARTIN-Nachricht mit der Datenaustauschreferenz SB20261120001 " +
				"vom 20.11.2026 wurde mit APERAK abgelehnt (Fehlercode Z29). Bitte senden Sie die Nachricht korrigiert " +
				"erneut. Mit freundlichen Grüßen i. A. Erika Mustermann Marktkommunikation",
		},
		{
			Folder: "INBOX", Date: "2026-11-21T08:00:00Z", Sender: "netzzugang@netz-nord.example",
			Subject: "AW: Zuordnungsermächtigung 9900123000002 Ref: ZE-2026-0042",
			Zitiert: []Citation{
				notFound("ZE-2026-0042"),
				notFound("VG-77812"),
				{Referenz: "40001234", Gefunden: true, Richtung: "ausgehend", EDIType: "UTILMD 55071",
					Date: "2026-11-20T09:15:00Z", Bezug: "40001234/MSG40001234-1", BezugTyp: BezugInterchange, Verdict: VerdictNoAnswer},
				{Referenz: "MSG40001234-1", Gefunden: true, Richtung: "ausgehend", EDIType: "UTILMD 55071",
					Date: "2026-11-20T09:15:00Z", Bezug: "40001234/MSG40001234-1", BezugTyp: BezugMessage, Verdict: VerdictNoAnswer},
			},
			Bewertung: BewertungOffen,
			MPID:      mpNord, Name: "Netz Nord GmbH", Offen: []string{},
			Text: "Hallo Herr Schmidt, die Zuordnungsermächtigung ist bei uns eingegangen und wurde verarbeitet. " +
				"Unsere Vorgangsnummer lautet VG-77812. Viele Grüße Netzbetrieb Nord",
		},
		{
			Folder: "INBOX", Date: "2026-11-20T16:00:00Z", Sender: "alt@removed.example", Subject: "RE: Your PARTIN message",
			Zitiert: []Citation{
				{Referenz: "4711000815", Gefunden: true, Richtung: "ausgehend", EDIType: "PARTIN 37003",
					Date: "2026-11-19T12:00:00Z", Bezug: "4711000815/PARTIN-4711-1", BezugTyp: BezugInterchange, Verdict: Accepted},
				{Referenz: "PARTIN-4711-1", Gefunden: true, Richtung: "ausgehend", EDIType: "PARTIN 37003",
					Date: "2026-11-19T12:00:00Z", Bezug: "4711000815/PARTIN-4711-1", BezugTyp: BezugMessage, Verdict: Accepted},
			},
			Bewertung: BewertungBestaetigt,
			// The sender maps to an mp_id outside the registry: passed over.
			MPID: mpNord, Name: "Netz Nord GmbH", Offen: []string{},
			Text: "Dear colleagues, we received your interchange reference 4711000815 and the message reference " +
				"PARTIN-4711-1. Both were processed on 2026-11-20 at 14:30. Our ticket INC0012345 is closed. " +
				"Kind regards Grid Operations",
		},
		{
			Folder: "INBOX", Date: "2026-11-20T12:00:00Z", Sender: "unbekannt@example.org", Subject: "Kontaktdaten",
			Zitiert: []Citation{}, Bewertung: BewertungOhneReferenz, Offen: []string{},
			Text: "Guten Tag, vielen Dank für Ihre Nachricht. Wir haben Ihre Kontaktdaten übernommen. " +
				"Ab dem 01.01.2027 erreichen Sie uns unter der neuen Adresse. Freundliche Grüße Ihr Netzbetreiber",
		},
		{
			Folder: "Netzbetreiber", Date: "2026-11-20T11:00:00Z", Sender: "x@y.example", Subject: "Rückfrage",
			Zitiert: []Citation{notFound("XY-123")}, Bewertung: BewertungOhneBezug, Offen: []string{},
			Text: "Bitte prüfen Sie Referenz XY-123.",
		},
	}}
	if got.LookbackDays != want.LookbackDays || len(got.Antworten) != len(want.Antworten) {
		t.Fatalf("got %d days, %d replies; want %d, %d", got.LookbackDays, len(got.Antworten), want.LookbackDays, len(want.Antworten))
	}
	for i := range want.Antworten {
		if g, w := got.Antworten[i], want.Antworten[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("reply %d:\n got %+v\nwant %+v", i, g, w)
		}
	}

	b, err := json.Marshal(got.Antworten[3])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"zitiert":[]`, `"offen":[]`, `"mp_id":""`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON %s lacks %s", b, s)
		}
	}
	if b, _ := json.Marshal(Reconcile(ReconcileInput{Tage: 3})); string(b) != `{"lookback_days":3,"antworten":[]}` {
		t.Errorf("empty reconciliation JSON = %s", b)
	}
}

func TestReconcileBewertung(t *testing.T) {
	ours := func(v Verdict) StoredMessage {
		return StoredMessage{ID: 1, Direction: Out, Type: "PARTIN", ProcessID: "37000", InterchangeRef: "RA-1", At: at("2026-11-20T09:00:00Z"), Verdict: v}
	}
	theirs := func(typ string, v Verdict) StoredMessage {
		return StoredMessage{ID: 2, Direction: In, Type: typ, InterchangeRef: "RB-2", At: at("2026-11-20T10:00:00Z"), Verdict: v}
	}
	tests := []struct {
		name     string
		a, b     *StoredMessage // found for RA-1 and RB-2; nil = not found
		verdicts []Verdict      // of the two citations
		want     Bewertung
	}{
		{"ours accepted, theirs (a PARTIN) is neutral", ptr(ours(Accepted)), ptr(theirs("PARTIN", VerdictNone)),
			[]Verdict{Accepted, Received}, BewertungBestaetigt},
		{"their PARTIN alone confirms nothing", nil, ptr(theirs("PARTIN", VerdictNone)),
			[]Verdict{VerdictUnknown, Received}, BewertungOffen},
		{"ours accepted, the other not found", ptr(ours(Accepted)), nil,
			[]Verdict{Accepted, VerdictUnknown}, BewertungBestaetigt},
		{"ours unanswered", ptr(ours(VerdictNone)), nil, []Verdict{VerdictNoAnswer, VerdictUnknown}, BewertungOffen},
		{"ours only received (CONTRL 8)", ptr(ours(Received)), nil, []Verdict{Received, VerdictUnknown}, BewertungOffen},
		{"their APERAK 312", nil, ptr(theirs("APERAK", Accepted)), []Verdict{VerdictUnknown, Accepted}, BewertungBestaetigt},
		{"their CONTRL 8", nil, ptr(theirs("CONTRL", Received)), []Verdict{VerdictUnknown, Received}, BewertungOffen},
		{"their CONTRL without a verdict counts as received", nil, ptr(theirs("CONTRL", VerdictNone)),
			[]Verdict{VerdictUnknown, Received}, BewertungOffen},
		{"ours accepted, their APERAK 313: rejected wins", ptr(ours(Accepted)), ptr(theirs("APERAK", Rejected)),
			[]Verdict{Accepted, Rejected}, BewertungAbgelehnt},
		{"ours rejected", ptr(ours(Rejected)), ptr(theirs("PARTIN", VerdictNone)), []Verdict{Rejected, Received}, BewertungAbgelehnt},
		{"nothing found", nil, nil, []Verdict{VerdictUnknown, VerdictUnknown}, BewertungOhneBezug},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := map[string][]StoredMessage{}
			if tt.a != nil {
				found["RA-1"] = []StoredMessage{*tt.a}
			}
			if tt.b != nil {
				found["RB-2"] = []StoredMessage{*tt.b}
			}
			mail := Mail{From: "x@y.example", Date: at("2026-11-21T08:00:00Z"), Text: "Referenzen RA-1 und RB-2"}
			r := Reconcile(ReconcileInput{Replies: []Mail{mail}, Found: found}).Antworten[0]
			var verdicts []Verdict
			for _, c := range r.Zitiert {
				verdicts = append(verdicts, c.Verdict)
			}
			if !slices.Equal(verdicts, tt.verdicts) {
				t.Errorf("verdicts = %v, want %v", verdicts, tt.verdicts)
			}
			if r.Bewertung != tt.want {
				t.Errorf("bewertung = %s, want %s", r.Bewertung, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestReconcilePartner(t *testing.T) {
	foundNord := StoredMessage{ID: 1, Direction: Out, PartnerMPID: mpNord, Type: "PARTIN", InterchangeRef: "RA-1", At: at("2026-11-20T09:00:00Z")}
	foundSued := StoredMessage{ID: 2, Direction: Out, PartnerMPID: mpSued, Type: "PARTIN", InterchangeRef: "RB-2", At: at("2026-11-20T09:00:00Z")}
	foundGone := StoredMessage{ID: 3, Direction: Out, PartnerMPID: mpGone, Type: "PARTIN", InterchangeRef: "RC-3", At: at("2026-11-20T09:00:00Z")}
	tests := []struct {
		name  string
		from  string
		text  string
		found map[string][]StoredMessage
		want  string
	}{
		{"sender address wins over a cited id and a found message", "netzzugang@netz-nord.example",
			"MP-ID " + mpSued + ", Referenz RB-2", map[string][]StoredMessage{"RB-2": {foundSued}}, mpNord},
		{"sender address compared in lower case", "NetzZugang@Netz-Nord.EXAMPLE", "", nil, mpNord},
		{"cited id in the registry before a found message; ids outside are passed over", "x@y.example",
			"IDs " + mpGone + " und " + mpSued + ", Referenz RA-1", map[string][]StoredMessage{"RA-1": {foundNord}}, mpSued},
		{"sender outside the registry, first found message in the registry", "alt@removed.example",
			"Referenzen RC-3 und RA-1 und RB-2",
			map[string][]StoredMessage{"RC-3": {foundGone}, "RA-1": {foundNord}, "RB-2": {foundSued}}, mpNord},
		{"nothing known", "x@y.example", "Referenz RC-3", map[string][]StoredMessage{"RC-3": {foundGone}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mail := Mail{From: tt.from, Date: at("2026-11-21T08:00:00Z"), Text: tt.text}
			r := Reconcile(ReconcileInput{Replies: []Mail{mail}, Found: tt.found, Partners: recPartners,
				EmailToMPID: recEmails, Overview: recOverview}).Antworten[0]
			if r.MPID != tt.want {
				t.Errorf("mp_id = %q, want %q", r.MPID, tt.want)
			}
			if wantName := recPartners[tt.want].Name; r.Name != wantName {
				t.Errorf("name = %q, want %q", r.Name, wantName)
			}
		})
	}
}

func TestBestMatch(t *testing.T) {
	m := func(id int64, dir Direction, when string) StoredMessage {
		return StoredMessage{ID: id, Direction: dir, At: at(when)}
	}
	tests := []struct {
		name   string
		msgs   []StoredMessage
		wantID int64
	}{
		{"ours before a newer one of theirs", []StoredMessage{m(1, In, "2026-11-21T00:00:00Z"), m(2, Out, "2026-11-20T00:00:00Z")}, 2},
		{"newest of ours", []StoredMessage{m(3, Out, "2026-11-20T00:00:00Z"), m(4, Out, "2026-11-22T00:00:00Z"), m(5, Out, "2026-11-21T00:00:00Z")}, 4},
		{"same time: highest id", []StoredMessage{m(7, Out, "2026-11-20T00:00:00Z"), m(6, Out, "2026-11-20T00:00:00Z")}, 7},
		{"theirs only: newest", []StoredMessage{m(8, In, "2026-11-20T00:00:00Z"), m(9, In, "2026-11-23T00:00:00Z")}, 9},
	}
	for _, tt := range tests {
		if got := bestMatch(tt.msgs); got == nil || got.ID != tt.wantID {
			t.Errorf("%s: best = %v, want id %d", tt.name, got, tt.wantID)
		}
	}
	if bestMatch(nil) != nil {
		t.Error("bestMatch(nil) != nil")
	}
}

func TestBezugTyp(t *testing.T) {
	m := &StoredMessage{InterchangeRef: "SB1", MessageRef: "M1", DocumentNo: "D1"}
	tests := []struct {
		ref  string
		want string
	}{
		{"SB1", BezugInterchange},
		{"M1", BezugMessage},
		{"D1", BezugDocument},
		{"sb1", BezugInterchange}, // the store may match ignoring case
		{"X9", BezugNone},
	}
	for _, tt := range tests {
		if got := bezugTyp(tt.ref, m); got != tt.want {
			t.Errorf("bezugTyp(%q) = %s, want %s", tt.ref, got, tt.want)
		}
	}
	// An exact match on a later field beats a case-insensitive one on an
	// earlier field.
	if got := bezugTyp("ab", &StoredMessage{InterchangeRef: "AB", MessageRef: "ab"}); got != BezugMessage {
		t.Errorf("exact message match = %s, want %s", got, BezugMessage)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		text string
		n    int
		want string
	}{
		{"short, white space collapsed", "  Hallo\n\n\tWelt  ", 400, "Hallo Welt"},
		{"exactly n runes", "aaa bbb", 7, "aaa bbb"},
		{"cut inside a word goes back to the space", "aaa bbb ccc", 5, "aaa…"},
		{"cut on a space keeps the whole word", "aaa bbb ccc", 7, "aaa bbb…"},
		{"one long word is cut inside", "abcdefghij", 4, "abcd…"},
		{"runes, not bytes", "ä ö ü ß x", 5, "ä ö ü…"},
	}
	for _, tt := range tests {
		if got := excerpt(tt.text, tt.n); got != tt.want {
			t.Errorf("%s: excerpt(%q, %d) = %q, want %q", tt.name, tt.text, tt.n, got, tt.want)
		}
	}
}

func TestReconcileText(t *testing.T) {
	// 80 words of 6 characters: word k starts at rune 7(k-1), so rune 400
	// falls inside word 58 and the excerpt ends after word 57. The quote
	// and the signature are dropped.
	var words []string
	for i := 1; i <= 80; i++ {
		words = append(words, fmt.Sprintf("Wort%02d", i))
	}
	body := strings.Join(words[:40], " ") + "\n\n" + strings.Join(words[40:], "\n") + "\n-- \nSignatur\n> Zitat"
	r := Reconcile(ReconcileInput{Replies: []Mail{{Date: time.Unix(0, 0), Text: body}}}).Antworten[0]
	if want := strings.Join(words[:57], " ") + "…"; r.Text != want {
		t.Errorf("text = %q\nwant   %q", r.Text, want)
	}
	if r.Date != "1970-01-01T00:00:00Z" {
		t.Errorf("date = %q", r.Date)
	}
}

// BenchmarkReconcile runs 2,000 replies citing 5 references each (three
// found), with a quoted original and a signature, as a busy month brings.
func BenchmarkReconcile(b *testing.B) {
	const n = 2000
	replies := make([]Mail, 0, n)
	found := map[string][]StoredMessage{}
	for i := range n {
		refs := make([]string, 5)
		for j := range refs {
			refs[j] = fmt.Sprintf("SB%08d%d", i, j)
		}
		for _, r := range refs[:3] {
			found[r] = []StoredMessage{{ID: int64(i), Direction: Out, PartnerMPID: mpNord, Type: "PARTIN", ProcessID: "37000",
				InterchangeRef: r, MessageRef: "1", At: at("2026-11-20T09:00:00Z"), Verdict: Accepted}}
		}
		text := fmt.Sprintf("Sehr geehrte Damen und Herren,\n\nIhre PARTIN-Nachricht mit der Datenaustauschreferenz %s vom 20.11.2026 "+
			"wurde verarbeitet. Die Nachrichtenreferenz %s ist bestätigt, die Übertragungsdatei %s ebenfalls.\n"+
			"Zu den Referenzen %s und %s liegt uns nichts vor.\n\nMit freundlichen Grüßen\nNetzbetrieb\n-- \n"+
			"Stadtwerke Musterstadt Netz GmbH, Tel. +49 341 1234567, HRB 12345\n\n"+
			"-----Ursprüngliche Nachricht-----\nVon: Mako <mako@schedbridge.example>\nGesendet: Freitag, 20. November 2026 10:15\n"+
			"An: netzzugang@netz-nord.example\nBetreff: PARTIN 37000\n\nanbei unsere PARTIN (Übertragungsdatei %s).\n",
			refs[0], refs[1], refs[2], refs[3], refs[4], refs[0])
		replies = append(replies, Mail{Folder: "INBOX", Date: at("2026-11-21T08:00:00Z"), From: "netzzugang@netz-nord.example",
			Subject: "AW: PARTIN " + refs[0], Text: text})
	}
	in := ReconcileInput{Now: at("2026-11-25T09:00:00Z"), Tage: 30, Replies: replies, Found: found,
		Partners: recPartners, EmailToMPID: recEmails, Overview: recOverview}
	if r := Reconcile(in).Antworten[0]; len(r.Zitiert) != 5 || r.Bewertung != BewertungBestaetigt {
		b.Fatalf("fixture: %d citations, %s", len(r.Zitiert), r.Bewertung)
	}
	b.ReportAllocs()
	for b.Loop() {
		Reconcile(in)
	}
}
