package sqldb_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// The contract of the market-communication store; jobs does not import
// storage, so the check can live here.
var _ jobs.MakoStore = (*sqldb.DB)(nil)

const (
	mpUs = "9900000000001" // our own market-partner id
	mpA  = "9900000000010"
	mpB  = "9900000000020"
	mpC  = "9900000000030"
	mpX  = "9900000000099" // never in the registry
)

// ic builds an interchange; sent (out) interchanges go from us to partner,
// received (in) ones from partner to us.
func ic(dir mako.Direction, partner, ref string, prepared time.Time, msgs ...mako.Message) *mako.Interchange {
	x := &mako.Interchange{Sender: mpUs, SenderQualifier: "500", Receiver: partner, ReceiverQualifier: "500",
		Ref: ref, PreparedAt: prepared, Messages: msgs}
	if dir == mako.In {
		x.Sender, x.Receiver = partner, mpUs
	}
	return x
}

func ediFile(key, etag string, dir mako.Direction, x *mako.Interchange) mako.EDIFile {
	seen := t0
	if x != nil {
		seen = x.PreparedAt
	}
	return mako.EDIFile{Key: key, ETag: etag, Size: 100, Direction: dir, SeenAt: seen, Interchange: x}
}

func partin(ref, doc, proc string, at time.Time) mako.Message {
	return mako.Message{Ref: ref, Type: "PARTIN", Version: "D:20B:UN:1.0c", BGM: "Z31", DocumentNo: doc, ProcessID: proc, Date: at}
}

func utilmd(ref, doc, proc string, at time.Time) mako.Message {
	return mako.Message{Ref: ref, Type: "UTILMD", Version: "D:11A:UN:S2.1", BGM: "E03", DocumentNo: doc, ProcessID: proc, Date: at}
}

// contrl is a CONTRL: it has no DTM, so its time is the UNB time.
func contrl(ref, refIC, refMsg string, v mako.Verdict) mako.Message {
	return mako.Message{Ref: ref, Type: "CONTRL", Version: "D:3:UN:2.0b",
		Ack: &mako.Ack{Verdict: v, RefInterchange: refIC, RefMessage: refMsg}}
}

func aperak(ref, doc, refMsg string, v mako.Verdict, at time.Time) mako.Message {
	bgm := "312"
	if v == mako.Rejected {
		bgm = "313"
	}
	return mako.Message{Ref: ref, Type: "APERAK", Version: "D:07B:UN:2.2", BGM: bgm, DocumentNo: doc, Date: at,
		Ack: &mako.Ack{Verdict: v, RefMessage: refMsg}}
}

func index(t *testing.T, db *sqldb.DB, files ...mako.EDIFile) {
	t.Helper()
	if err := db.IndexEDIFiles(context.Background(), files); err != nil {
		t.Fatal(err)
	}
}

// byDoc looks up messages by document number and returns the one of the
// given direction.
func byDoc(t *testing.T, db *sqldb.DB, dir mako.Direction, doc string) mako.StoredMessage {
	t.Helper()
	got, err := db.LookupReferences(context.Background(), []string{doc})
	if err != nil {
		t.Fatal(err)
	}
	var found []mako.StoredMessage
	for _, m := range got[doc] {
		if m.DocumentNo == doc && m.Direction == dir {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("document %s (%s): found %d messages: %+v", doc, dir, len(found), got[doc])
	}
	return found[0]
}

func registry(hash string, at time.Time, ps ...mako.Partner) mako.RegistryImport {
	return mako.RegistryImport{Source: "api", Hash: hash, At: at, Partners: ps}
}

func TestMakoRegistry(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		t1, t2 := t0.Add(24*time.Hour), t0.Add(48*time.Hour)
		steps := []struct {
			name string
			imp  mako.RegistryImport
			want mako.RegistryResult
			// emails of the current registry per partner
			current map[string][]string
		}{
			{"first import", registry("h1", t0,
				mako.Partner{MPID: mpB, Name: "Netz B", ControlArea: "TenneT", Emails: []string{"b1@netz-b.de"}},
				mako.Partner{MPID: mpA, Name: "Netz A", ControlArea: "Amprion", BalancingArea: "11YA", Emails: []string{" A2@Netz-A.de", "a1@netz-a.de", "a1@netz-a.de"}}),
				mako.RegistryResult{Partners: 2, Added: 2, ContactsAdded: 3, Hash: "h1"},
				map[string][]string{mpA: {"a1@netz-a.de", "a2@netz-a.de"}, mpB: {"b1@netz-b.de"}}},
			{"same hash", registry("h1", t1, mako.Partner{MPID: mpC, Name: "ignored", Emails: []string{"c@x.de"}}),
				mako.RegistryResult{Partners: 2, Hash: "h1", Unchanged: true},
				map[string][]string{mpA: {"a1@netz-a.de", "a2@netz-a.de"}, mpB: {"b1@netz-b.de"}}},
			{"B leaves, C joins, A changes an address", registry("h2", t1,
				mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"a1@netz-a.de", "a3@netz-a.de"}},
				mako.Partner{MPID: mpC, Name: "Netz C", Emails: []string{"c1@netz-c.de"}}),
				mako.RegistryResult{Partners: 2, Added: 1, Removed: 1, ContactsAdded: 2, ContactsEnded: 2, Hash: "h2"},
				map[string][]string{mpA: {"a1@netz-a.de", "a3@netz-a.de"}, mpC: {"c1@netz-c.de"}}},
			{"A lists a2 again, C takes over a3", registry("h3", t2,
				mako.Partner{MPID: mpA, Name: "Netz A neu", Emails: []string{"a1@netz-a.de", "a2@netz-a.de"}},
				mako.Partner{MPID: mpC, Name: "Netz C", Emails: []string{"c1@netz-c.de", "a3@netz-a.de"}}),
				mako.RegistryResult{Partners: 2, ContactsAdded: 2, ContactsEnded: 1, Hash: "h3"},
				map[string][]string{mpA: {"a1@netz-a.de", "a2@netz-a.de"}, mpC: {"a3@netz-a.de", "c1@netz-c.de"}}},
		}
		for _, s := range steps {
			got, err := db.ReplacePartners(ctx, s.imp)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if got != s.want {
				t.Errorf("%s: result %+v, want %+v", s.name, got, s.want)
			}
			ps, err := db.Partners(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cur := map[string][]string{}
			var ids []string
			for _, p := range ps {
				cur[p.MPID] = p.Emails
				ids = append(ids, p.MPID)
			}
			if !slices.IsSorted(ids) || fmt.Sprint(cur) != fmt.Sprint(s.current) {
				t.Errorf("%s: partners %v, want %v", s.name, cur, s.current)
			}
		}
		if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_registry_imports"); err != nil || n != "3" {
			t.Errorf("imports recorded = %s, %v (the unchanged one must write nothing)", n, err)
		}
		a, err := db.Partner(ctx, mpA)
		if err != nil || a.Name != "Netz A neu" || a.ControlArea != "" {
			t.Errorf("partner A = %+v, %v", a, err)
		}
		if _, err := db.Partner(ctx, mpB); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("removed partner B: %v", err)
		}

		// A's history: a1 untouched since t0; a2 ended at t1 and started
		// again at t2; a3 from t1 to t2.
		hist, err := sqldb.MakoContactHistory(ctx, db, mpA)
		if err != nil {
			t.Fatal(err)
		}
		type span struct {
			email    string
			from, to time.Time
		}
		var gotSpans []span
		for _, h := range hist {
			s := span{email: h.Email, from: h.ValidFrom}
			if h.ValidTo != nil {
				s.to = *h.ValidTo
			}
			gotSpans = append(gotSpans, s)
		}
		wantSpans := []span{
			{"a1@netz-a.de", t0, time.Time{}},
			{"a2@netz-a.de", t0, t1},
			{"a2@netz-a.de", t2, time.Time{}},
			{"a3@netz-a.de", t1, t2},
		}
		if fmt.Sprint(gotSpans) != fmt.Sprint(wantSpans) {
			t.Errorf("history of A:\n got %v\nwant %v", gotSpans, wantSpans)
		}

		emails, err := db.PartnerEmails(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantEmails := map[string]string{
			"a1@netz-a.de": mpA, "a2@netz-a.de": mpA,
			"a3@netz-a.de": mpC, // current listing of C wins over A's history
			"b1@netz-b.de": mpB, // B left the registry; its address stays as history
			"c1@netz-c.de": mpC,
		}
		if fmt.Sprint(emails) != fmt.Sprint(wantEmails) {
			t.Errorf("partner emails = %v, want %v", emails, wantEmails)
		}
	})
}

func TestMakoRegistryInvalid(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		good := mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"a@netz-a.de"}}
		if _, err := db.ReplacePartners(ctx, registry("h1", t0, good)); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			imp  mako.RegistryImport
			want string // part of the message naming the entry
		}{
			{"short mp_id", registry("h2", t0, good, mako.Partner{MPID: "990000000002", Name: "Kurz"}), "entry 2"},
			{"letters in mp_id", registry("h2", t0, mako.Partner{MPID: "99000000000AB", Name: "Buchstaben"}, good), "99000000000AB"},
			{"empty name", registry("h2", t0, good, mako.Partner{MPID: mpB, Name: "  "}), mpB},
			{"mp_id twice", registry("h2", t0, good, mako.Partner{MPID: mpA, Name: "Netz A again"}), "listed twice"},
			{"no time", registry("h2", time.Time{}, good), "time"},
		}
		for _, c := range cases {
			_, err := db.ReplacePartners(ctx, c.imp)
			if pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want Invalid naming %q", c.name, err, c.want)
			}
		}
		ps, err := db.Partners(ctx)
		if err != nil || len(ps) != 1 || ps[0].MPID != mpA || !slices.Equal(ps[0].Emails, []string{"a@netz-a.de"}) {
			t.Errorf("registry after invalid imports = %+v, %v", ps, err)
		}
		if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_registry_imports"); err != nil || n != "1" {
			t.Errorf("imports recorded = %s, %v", n, err)
		}
	})
}

// TestMakoAnswerCorrelation indexes each scenario's messages and answers in
// every order (messages first, answers first, one batch) and checks the
// answer of record of each message of ours.
func TestMakoAnswerCorrelation(t *testing.T) {
	type want struct {
		verdict mako.Verdict
		at      time.Time // answered at
	}
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	type scenario struct {
		name string
		// ours and theirs build the files with refs prefixed by p.
		ours   func(p string) []mako.EDIFile
		theirs func(p string) []mako.EDIFile
		want   map[string]want // by document number of our message (without prefix)
	}
	// Our interchange IC1 to A with two messages, a second interchange to A,
	// and one to B that reuses A's interchange reference.
	ours := func(p string) []mako.EDIFile {
		return []mako.EDIFile{
			ediFile(p+"out/1", "e", mako.Out, ic(mako.Out, mpA, p+"IC1", h(0),
				partin("1", p+"D1", "37000", h(0)), utilmd("2", p+"D2", "55071", h(0)))),
			ediFile(p+"out/2", "e", mako.Out, ic(mako.Out, mpA, p+"IC2", h(0), partin("1", p+"D3", "37000", h(0)))),
			ediFile(p+"out/3", "e", mako.Out, ic(mako.Out, mpB, p+"IC1", h(0), partin("1", p+"D4", "37000", h(0)))),
			// Our own APERAK to A: acknowledgments are never answered.
			ediFile(p+"out/4", "e", mako.Out, ic(mako.Out, mpA, p+"IC4", h(0), aperak("1", p+"D5", "x", mako.Accepted, h(0)))),
		}
	}
	none := want{}
	scenarios := []scenario{
		{"CONTRL rejects a whole interchange", ours, func(p string) []mako.EDIFile {
			return []mako.EDIFile{ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(1), contrl("1", p+"IC1", "", mako.Rejected)))}
		}, map[string]want{"D1": {mako.Rejected, h(1)}, "D2": {mako.Rejected, h(1)}, "D3": none, "D4": none, "D5": {mako.Accepted, time.Time{}}}},
		{"CONTRL naming one message", ours, func(p string) []mako.EDIFile {
			return []mako.EDIFile{ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(1), contrl("1", p+"IC1", "2", mako.Accepted)))}
		}, map[string]want{"D1": none, "D2": {mako.Accepted, h(1)}, "D3": none, "D4": none}},
		{"APERAK by document number, partner must match", ours, func(p string) []mako.EDIFile {
			return []mako.EDIFile{
				ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(2), aperak("1", p+"A1", p+"D3", mako.Accepted, h(1)))),
				ediFile(p+"in/2", "e", mako.In, ic(mako.In, mpB, p+"C2", h(2), aperak("1", p+"A2", p+"D1", mako.Rejected, h(1)))),
				ediFile(p+"in/3", "e", mako.In, ic(mako.In, mpA, p+"C3", h(2), aperak("1", p+"A3", p+"D5", mako.Rejected, h(1)))),
			}
		}, map[string]want{"D1": none, "D2": none, "D3": {mako.Accepted, h(1)}, "D4": none, "D5": {mako.Accepted, time.Time{}}}},
		{"APERAK by message reference", func(p string) []mako.EDIFile {
			return []mako.EDIFile{ediFile(p+"out/1", "e", mako.Out, ic(mako.Out, mpA, p+"IC1", h(0),
				partin(p+"M1", p+"D1", "37000", h(0)), partin(p+"M2", p+"D2", "37000", h(0))))}
		}, func(p string) []mako.EDIFile {
			return []mako.EDIFile{ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(2), aperak("1", p+"A1", p+"M2", mako.Rejected, h(2))))}
		}, map[string]want{"D1": none, "D2": {mako.Rejected, h(2)}}},
		{"a final verdict beats a later receipt", ours, func(p string) []mako.EDIFile {
			return []mako.EDIFile{
				ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(1), aperak("1", p+"A1", p+"D1", mako.Accepted, h(1)))),
				ediFile(p+"in/2", "e", mako.In, ic(mako.In, mpA, p+"C2", h(3), contrl("1", p+"IC1", "", mako.Received))),
			}
		}, map[string]want{"D1": {mako.Accepted, h(1)}, "D2": {mako.Received, h(3)}}},
		{"the newer final verdict wins, a rejection at the same instant", ours, func(p string) []mako.EDIFile {
			return []mako.EDIFile{
				ediFile(p+"in/1", "e", mako.In, ic(mako.In, mpA, p+"C1", h(1), aperak("1", p+"A1", p+"D1", mako.Rejected, h(1)))),
				ediFile(p+"in/2", "e", mako.In, ic(mako.In, mpA, p+"C2", h(2), aperak("1", p+"A2", p+"D1", mako.Accepted, h(2)))),
				ediFile(p+"in/3", "e", mako.In, ic(mako.In, mpA, p+"C3", h(2), aperak("1", p+"A3", p+"D2", mako.Accepted, h(2)),
					aperak("2", p+"A4", p+"D2", mako.Rejected, h(2)))),
			}
		}, map[string]want{"D1": {mako.Accepted, h(2)}, "D2": {mako.Rejected, h(2)}}},
	}
	orders := []struct {
		name string
		run  func(t *testing.T, db *sqldb.DB, ours, theirs []mako.EDIFile)
	}{
		{"messages first", func(t *testing.T, db *sqldb.DB, ours, theirs []mako.EDIFile) {
			index(t, db, ours...)
			for _, f := range theirs {
				index(t, db, f)
			}
		}},
		{"answers first", func(t *testing.T, db *sqldb.DB, ours, theirs []mako.EDIFile) {
			for i := len(theirs) - 1; i >= 0; i-- {
				index(t, db, theirs[i])
			}
			index(t, db, ours...)
		}},
		{"one batch", func(t *testing.T, db *sqldb.DB, ours, theirs []mako.EDIFile) {
			index(t, db, append(append([]mako.EDIFile{}, theirs...), ours...)...)
		}},
	}
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		for si, s := range scenarios {
			for oi, o := range orders {
				// Each run has its own keys and references in the one database.
				p := fmt.Sprintf("s%do%d-", si, oi)
				o.run(t, db, s.ours(p), s.theirs(p))
				for doc, w := range s.want {
					m := byDoc(t, db, mako.Out, p+doc)
					if m.Verdict != w.verdict || !m.AnsweredAt.Equal(w.at) {
						t.Errorf("%s, %s: %s = %q answered %v, want %q at %v", s.name, o.name, doc, m.Verdict, m.AnsweredAt, w.verdict, w.at)
					}
				}
			}
		}
	})
}

func TestMakoReindex(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
		older := ediFile("outbox/edifact/0.edi", "e1", mako.Out, ic(mako.Out, mpA, "IC0", h(0), partin("1", "D0", "37000", h(0))))
		out := func(etag string, msgs ...mako.Message) mako.EDIFile {
			return ediFile("outbox/edifact/1.edi", etag, mako.Out, ic(mako.Out, mpA, "IC1", h(1), msgs...))
		}
		answer := func(etag string, msgs ...mako.Message) mako.EDIFile {
			return ediFile("inbox/edifact/1.edi", etag, mako.In, ic(mako.In, mpA, "C1", h(2), msgs...))
		}
		m1, m2 := partin("1", "D1", "37000", h(1)), utilmd("2", "D2", "55071", h(1))
		index(t, db, older, out("e1", m1, m2), answer("e1", contrl("1", "IC1", "", mako.Rejected)))

		type check struct {
			doc     string
			verdict mako.Verdict
			at      time.Time
		}
		steps := []struct {
			name   string
			files  []mako.EDIFile
			checks []check
			gone   []string // documents no longer indexed
			// latestPartin is the document of A's newest PARTIN out.
			latestPartin string
		}{
			{"initial", nil, []check{{"D1", mako.Rejected, h(2)}, {"D2", mako.Rejected, h(2)}}, nil, "D1"},
			{"the CONTRL file now accepts", []mako.EDIFile{answer("e2", contrl("1", "IC1", "", mako.Accepted))},
				[]check{{"D1", mako.Accepted, h(2)}, {"D2", mako.Accepted, h(2)}}, nil, "D1"},
			{"same ETag is left alone", []mako.EDIFile{answer("e2", contrl("1", "IC1", "", mako.Rejected))},
				[]check{{"D1", mako.Accepted, h(2)}, {"D2", mako.Accepted, h(2)}}, nil, "D1"},
			{"the answer file becomes an APERAK for D2 only", []mako.EDIFile{answer("e3", aperak("1", "A1", "D2", mako.Rejected, h(3)))},
				[]check{{"D1", mako.VerdictNone, time.Time{}}, {"D2", mako.Rejected, h(3)}}, nil, "D1"},
			{"our file loses D2", []mako.EDIFile{out("e2", m1)},
				[]check{{"D1", mako.VerdictNone, time.Time{}}}, []string{"D2"}, "D1"},
			{"our file becomes unparseable", []mako.EDIFile{{Key: "outbox/edifact/1.edi", ETag: "e3", Direction: mako.Out, SeenAt: h(5), Error: "no UNB"}},
				nil, []string{"D1", "D2"}, "D0"},
			{"our file comes back with D2 under a new reference", []mako.EDIFile{out("e4", m1, utilmd("3", "D2", "55071", h(1)))},
				[]check{{"D1", mako.VerdictNone, time.Time{}}, {"D2", mako.Rejected, h(3)}}, nil, "D1"},
		}
		for _, s := range steps {
			if len(s.files) > 0 {
				index(t, db, s.files...)
			}
			for _, c := range s.checks {
				m := byDoc(t, db, mako.Out, c.doc)
				if m.Verdict != c.verdict || !m.AnsweredAt.Equal(c.at) {
					t.Errorf("%s: %s = %q at %v, want %q at %v", s.name, c.doc, m.Verdict, m.AnsweredAt, c.verdict, c.at)
				}
			}
			refs, err := db.LookupReferences(ctx, s.gone)
			if err != nil || len(refs) != 0 {
				t.Errorf("%s: removed documents still found: %v, %v", s.name, refs, err)
			}
			facts, err := db.MakoFacts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := facts[mpA].Latest[mako.PartinOut].DocumentNo; got != s.latestPartin {
				t.Errorf("%s: newest PARTIN out of A is %q, want %q", s.name, got, s.latestPartin)
			}
		}
		n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_edi_messages")
		if err != nil || n != "4" { // D0, D1, D2, the APERAK
			t.Errorf("messages after re-indexing = %s, %v", n, err)
		}
		tags, err := db.EDIFileETags(ctx, "outbox/")
		if err != nil || fmt.Sprint(tags) != fmt.Sprint(map[string]string{"outbox/edifact/0.edi": "e1", "outbox/edifact/1.edi": "e4"}) {
			t.Errorf("outbox etags = %v, %v", tags, err)
		}
		if tags, err := db.EDIFileETags(ctx, "inbox/edifact/"); err != nil || len(tags) != 1 || tags["inbox/edifact/1.edi"] != "e3" {
			t.Errorf("inbox etags = %v, %v", tags, err)
		}
		if errs, err := db.EDIFileErrors(ctx, 10); err != nil || len(errs) != 0 {
			t.Errorf("the repaired file is still reported: %+v, %v", errs, err)
		}
	})
}

func TestMakoFacts(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
		if _, err := db.ReplacePartners(ctx, registry("h1", t0,
			mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"old@netz-a.de"}},
			mako.Partner{MPID: mpB, Name: "Netz B", Emails: []string{"b@netz-b.de"}})); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ReplacePartners(ctx, registry("h2", h(1),
			mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"new@netz-a.de"}},
			mako.Partner{MPID: mpB, Name: "Netz B", Emails: []string{"b@netz-b.de"}},
			mako.Partner{MPID: mpC, Name: "Netz C", Emails: []string{"c@netz-c.de"}})); err != nil {
			t.Fatal(err)
		}
		out := func(key string, partner, ref string, at time.Time, msgs ...mako.Message) mako.EDIFile {
			return ediFile("outbox/edifact/"+key, "e", mako.Out, ic(mako.Out, partner, ref, at, msgs...))
		}
		in := func(key string, partner, ref string, at time.Time, msgs ...mako.Message) mako.EDIFile {
			return ediFile("inbox/edifact/"+key, "e", mako.In, ic(mako.In, partner, ref, at, msgs...))
		}
		index(t, db,
			out("a1", mpA, "R1", h(1), partin("1", "PA1", "37000", h(1))),
			out("a2", mpA, "R2", h(3), partin("1", "PA3", "37000", h(3))),
			out("z1", mpA, "R3", h(2), utilmd("1", "ZA", "55071", h(2))),
		)
		// Indexed later but older: the newest stays.
		index(t, db, out("a3", mpA, "R4", h(2), partin("1", "PA2", "37000", h(2))))
		index(t, db,
			out("z2", mpA, "R5", h(5), utilmd("1", "ZD", "55072", h(5))), // no stream, but a contact
			in("ap", mpA, "C1", h(6), aperak("1", "AP1", "PA3", mako.Rejected, h(6))),
			in("pb", mpB, "C2", h(4), partin("1", "PB1", "37001", h(4))),
			in("px", mpX, "C3", h(4), partin("1", "PX1", "37001", h(4))),
			out("b1", mpB, "R6", h(7), partin("1", "PB-first", "37000", h(7))),
		)
		// Same time as PB-first, indexed later: it wins the tie.
		index(t, db, out("b2", mpB, "R7", h(7), partin("1", "PB-second", "37000", h(7))))

		mails := []mako.Mail{
			{Source: "imap:INBOX:1:1", Folder: "INBOX", Direction: mako.In, MessageID: "<1@a>", Date: h(8), From: "old@netz-a.de",
				To: []string{"mako@us.de"}, Subject: "Re: PARTIN"},
			{Source: "imap:Sent:1:1", Folder: "Sent", Direction: mako.Out, MessageID: "<2@us>", Date: h(7), From: "mako@us.de",
				To: []string{"NEW@netz-a.de"}, Subject: "PARTIN"},
			{Source: "imap:INBOX:1:2", Folder: "INBOX", Direction: mako.In, MessageID: "<3@x>", Date: h(9), From: "someone@else.de",
				To: []string{"mako@us.de", "b@netz-b.de"}, Subject: "B only in copy"},
			{Source: "imap:Sent:1:2", Folder: "Sent", Direction: mako.Out, MessageID: "<4@us>", Date: h(5), From: "mako@us.de",
				To: []string{"x@y.de", "b@netz-b.de"}, Subject: "Zuordnungsermaechtigung"},
			{Source: "imap:INBOX:1:3", Folder: "INBOX", Direction: mako.In, MessageID: "<5@b>", Date: h(3), From: "b@netz-b.de",
				Subject: "older from B"},
		}
		if n, err := db.IndexMails(ctx, mails); err != nil || n != len(mails) {
			t.Fatalf("index mails = %d, %v", n, err)
		}

		facts, err := db.MakoFacts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type latest struct {
			doc     string
			verdict mako.Verdict
			at      time.Time
		}
		cases := []struct {
			mpid   string
			latest map[mako.Stream]latest
			edi    *mako.Contact
			mail   *mako.Contact
		}{
			{mpA, map[mako.Stream]latest{
				mako.PartinOut:    {"PA3", mako.Rejected, h(3)},
				mako.ZuordnungOut: {"ZA", mako.VerdictNone, h(2)},
				mako.AckIn:        {"AP1", mako.Rejected, h(6)},
			},
				&mako.Contact{At: h(6), Channel: "edifact", Direction: mako.In, What: "APERAK abgelehnt erhalten"},
				&mako.Contact{At: h(8), Channel: "mail", Direction: mako.In, What: "E-Mail erhalten: Re: PARTIN"}},
			{mpB, map[mako.Stream]latest{
				mako.PartinIn:  {"PB1", mako.VerdictNone, h(4)},
				mako.PartinOut: {"PB-second", mako.VerdictNone, h(7)},
			},
				&mako.Contact{At: h(7), Channel: "edifact", Direction: mako.Out, What: "PARTIN 37000 gesendet"},
				&mako.Contact{At: h(5), Channel: "mail", Direction: mako.Out, What: "E-Mail gesendet: Zuordnungsermaechtigung"}},
			{mpC, map[mako.Stream]latest{}, nil, nil},
			{mpX, map[mako.Stream]latest{mako.PartinIn: {"PX1", mako.VerdictNone, h(4)}},
				&mako.Contact{At: h(4), Channel: "edifact", Direction: mako.In, What: "PARTIN 37001 erhalten"}, nil},
		}
		if len(facts) != len(cases) {
			t.Errorf("facts for %d partners, want %d", len(facts), len(cases))
		}
		for _, c := range cases {
			f, ok := facts[c.mpid]
			if !ok {
				t.Errorf("%s: no facts", c.mpid)
				continue
			}
			got := map[mako.Stream]latest{}
			for st, m := range f.Latest {
				if m.Stream != st || m.PartnerMPID != c.mpid {
					t.Errorf("%s: %s holds %+v", c.mpid, st, m)
				}
				got[st] = latest{m.DocumentNo, m.Verdict, m.At}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.latest) {
				t.Errorf("%s: latest\n got %v\nwant %v", c.mpid, got, c.latest)
			}
			if fmt.Sprint(f.Edi) != fmt.Sprint(c.edi) {
				t.Errorf("%s: edi contact %v, want %v", c.mpid, f.Edi, c.edi)
			}
			if fmt.Sprint(f.Mail) != fmt.Sprint(c.mail) {
				t.Errorf("%s: mail contact %v, want %v", c.mpid, f.Mail, c.mail)
			}
		}
		if m := facts[mpA].Latest[mako.PartinOut]; m.FileKey != "outbox/edifact/a2" || m.InterchangeRef != "R2" || !m.AnsweredAt.Equal(h(6)) {
			t.Errorf("newest PARTIN out of A = %+v", m)
		}
	})
}

func TestMakoLookupReferences(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		// R7 is the interchange reference of one file, the message reference
		// of a message in another and the document number of a third.
		index(t, db,
			ediFile("outbox/1", "e", mako.Out, ic(mako.Out, mpA, "R7", t0, partin("1", "D1", "37000", t0), partin("2", "D2", "37000", t0))),
			ediFile("outbox/2", "e", mako.Out, ic(mako.Out, mpB, "R8", t0.Add(time.Hour), partin("R7", "D3", "37000", time.Time{}))),
			ediFile("inbox/1", "e", mako.In, ic(mako.In, mpB, "R9", t0.Add(-time.Hour), aperak("1", "R7", "D3", mako.Accepted, time.Time{}))),
		)
		// Many files, so that several hundred refs go through the chunks.
		var many []mako.EDIFile
		var refs []string
		for i := range 700 {
			many = append(many, ediFile(fmt.Sprintf("outbox/m%d", i), "e", mako.Out,
				ic(mako.Out, mpC, fmt.Sprintf("M%04d", i), t0, partin("1", fmt.Sprintf("MD%04d", i), "37000", t0))))
			refs = append(refs, fmt.Sprintf("MD%04d", i))
		}
		index(t, db, many...)
		got, err := db.LookupReferences(ctx, append(refs, "R7", "R7", "", "nothing"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 701 {
			t.Errorf("found %d refs, want 701", len(got))
		}
		for _, r := range refs {
			if ms := got[r]; len(ms) != 1 || ms[0].DocumentNo != r || ms[0].PartnerMPID != mpC {
				t.Fatalf("%s: %+v", r, ms)
			}
		}
		var r7 []string
		for _, m := range got["R7"] {
			r7 = append(r7, fmt.Sprintf("%s %s %s %s %s", m.FileKey, m.Direction, m.InterchangeRef, m.MessageRef, m.DocumentNo))
		}
		// Ordered by time: the APERAK (UNB time t0-1h), the two messages of
		// R7 (t0), the message R7 (its UNB time t0+1h).
		want := []string{
			"inbox/1 in R9 1 R7",
			"outbox/1 out R7 1 D1",
			"outbox/1 out R7 2 D2",
			"outbox/2 out R8 R7 D3",
		}
		if !slices.Equal(r7, want) {
			t.Errorf("R7:\n got %q\nwant %q", r7, want)
		}
		if d3 := got["R7"][3]; d3.Verdict != mako.Accepted || !d3.AnsweredAt.Equal(t0.Add(-time.Hour)) || !d3.At.Equal(t0.Add(time.Hour)) {
			t.Errorf("D3 = %+v", d3)
		}
		if _, ok := got["nothing"]; ok {
			t.Error("an unknown ref is in the map")
		}
	})
}

func TestMakoEDIFileErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		var files []mako.EDIFile
		for i := range 5 {
			files = append(files, mako.EDIFile{Key: fmt.Sprintf("inbox/edifact/bad%d", i), ETag: "e", Size: int64(i),
				Direction: mako.In, SeenAt: t0.Add(time.Duration(i) * time.Minute), Error: fmt.Sprintf("segment %d", i)})
		}
		files = append(files, ediFile("inbox/edifact/good", "e", mako.In, ic(mako.In, mpA, "R", t0.Add(time.Hour))))
		index(t, db, files...)
		got, err := db.EDIFileErrors(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, f := range got {
			keys = append(keys, f.Key)
			if f.Interchange != nil || f.Error == "" {
				t.Errorf("%s: %+v", f.Key, f)
			}
		}
		if !slices.Equal(keys, []string{"inbox/edifact/bad4", "inbox/edifact/bad3", "inbox/edifact/bad2"}) {
			t.Errorf("errors = %v", keys)
		}
		if got[0].Error != "segment 4" || got[0].Size != 4 || !got[0].SeenAt.Equal(t0.Add(4*time.Minute)) || got[0].Direction != mako.In {
			t.Errorf("newest error = %+v", got[0])
		}
		if all, err := db.EDIFileErrors(ctx, 0); err != nil || len(all) != 5 {
			t.Errorf("all errors = %d, %v", len(all), err)
		}
		for _, bad := range []mako.EDIFile{
			{Key: "", Direction: mako.In, Error: "x"},
			{Key: "k", Direction: "sideways", Error: "x"},
			{Key: "k", Direction: mako.In},
		} {
			if err := db.IndexEDIFiles(ctx, []mako.EDIFile{bad}); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%+v accepted: %v", bad, err)
			}
		}
	})
}

func TestMakoNextInterchangeRef(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		const workers, each = 8, 50
		var mu sync.Mutex
		var refs []string
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					r, err := db.NextInterchangeRef(ctx)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					refs = append(refs, r)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sort.Strings(refs)
		if len(refs) != workers*each || len(slices.Compact(slices.Clone(refs))) != len(refs) {
			t.Fatalf("got %d refs, %d distinct", len(refs), len(slices.Compact(slices.Clone(refs))))
		}
		for _, r := range refs {
			if len(r) != 14 || !strings.HasPrefix(r, "SB") {
				t.Fatalf("ref %q", r)
			}
		}
	})
}

func TestMakoVormerkungen(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, err := db.ReplacePartners(ctx, registry("h1", t0, mako.Partner{MPID: mpA, Name: "Netz A"})); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			v       mako.Vormerkung
			created bool
			reason  string // reason stored
			name    string
		}{
			{mako.Vormerkung{MPID: mpA, Stream: mako.ZuordnungOut, Reason: "abgelehnt", NotedAt: t0.Add(time.Hour), Basis: "abgelehnt/R1"}, true, "abgelehnt", "Netz A"},
			{mako.Vormerkung{MPID: mpA, Stream: mako.ZuordnungOut, Reason: "again", NotedAt: t0.Add(2 * time.Hour), Basis: "fehlt"}, false, "abgelehnt", "Netz A"},
			{mako.Vormerkung{MPID: mpA, Stream: mako.PartinOut, Reason: "neu", NotedAt: t0.Add(time.Hour), Name: "not stored"}, true, "neu", "Netz A"},
			{mako.Vormerkung{MPID: mpX, Stream: mako.PartinOut, Reason: "unbekannt", NotedAt: t0}, true, "unbekannt", ""},
		}
		for i, s := range steps {
			got, created, err := db.NoteVormerkung(ctx, s.v)
			if err != nil || created != s.created || got.Reason != s.reason || got.Name != s.name || got.MPID != s.v.MPID || got.Stream != s.v.Stream {
				t.Errorf("step %d: %+v %v %v", i, got, created, err)
			}
		}
		for _, bad := range []mako.Vormerkung{
			{MPID: mpA, Stream: mako.AckIn, NotedAt: t0},
			{MPID: "123", Stream: mako.PartinOut, NotedAt: t0},
			{MPID: mpA, Stream: mako.PartinOut},
		} {
			if _, _, err := db.NoteVormerkung(ctx, bad); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%+v: %v", bad, err)
			}
		}
		list, err := db.Vormerkungen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, v := range list {
			keys = append(keys, v.Key())
		}
		want := []string{mpX + ":partin_out", mpA + ":partin_out", mpA + ":zuordnungsermaechtigung_out"}
		if !slices.Equal(keys, want) || !list[2].NotedAt.Equal(t0.Add(time.Hour)) || list[0].Name != "" || list[1].Name != "Netz A" {
			t.Errorf("list = %+v", list)
		}
		if d, err := db.Dismissed(ctx); err != nil || len(d) != 0 {
			t.Errorf("dismissed before any delete = %v, %v", d, err)
		}
		del, err := db.DeleteVormerkung(ctx, mpA, mako.ZuordnungOut)
		if err != nil || del.Reason != "abgelehnt" || del.Name != "Netz A" || !del.NotedAt.Equal(t0.Add(time.Hour)) || del.Basis != "abgelehnt/R1" {
			t.Errorf("delete = %+v, %v", del, err)
		}
		if _, err := db.DeleteVormerkung(ctx, mpX, mako.PartinOut); err != nil {
			t.Fatal(err)
		}
		// Noted again on another basis and deleted: the newer dismissal replaces the older.
		if _, created, err := db.NoteVormerkung(ctx, mako.Vormerkung{MPID: mpA, Stream: mako.ZuordnungOut, NotedAt: t0, Basis: "fehlt"}); err != nil || !created {
			t.Fatalf("note again: %v %v", created, err)
		}
		if _, err := db.DeleteVormerkung(ctx, mpA, mako.ZuordnungOut); err != nil {
			t.Fatal(err)
		}
		d, err := db.Dismissed(ctx)
		if want := map[string]string{mpA + ":zuordnungsermaechtigung_out": "fehlt", mpX + ":partin_out": ""}; err != nil || fmt.Sprint(d) != fmt.Sprint(want) {
			t.Errorf("dismissed = %v, %v; want %v", d, err, want)
		}
		_, err = db.DeleteVormerkung(ctx, mpA, mako.ZuordnungOut)
		if pipeline.KindOf(err) != pipeline.NotFound || pipeline.MessageOf(err) != "no pre-listing "+mpA+":zuordnungsermaechtigung_out" {
			t.Errorf("delete again: %v", err)
		}
		if list, err := db.Vormerkungen(ctx); err != nil || len(list) != 1 || list[0].Key() != mpA+":partin_out" {
			t.Errorf("after delete: %+v, %v", list, err)
		}
		// Resolving removes the pre-listing and forgets the dismissal of its
		// key; resolving a key without either is no error.
		for _, k := range []mako.Stream{mako.PartinOut, mako.ZuordnungOut} {
			if err := db.ResolveVormerkung(ctx, mpA, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.ResolveVormerkung(ctx, mpA, mako.PartinOut); err != nil {
			t.Fatalf("resolve twice: %v", err)
		}
		if list, err := db.Vormerkungen(ctx); err != nil || len(list) != 0 {
			t.Errorf("after resolve: %+v, %v", list, err)
		}
		d, err = db.Dismissed(ctx)
		if want := map[string]string{mpX + ":partin_out": ""}; err != nil || fmt.Sprint(d) != fmt.Sprint(want) {
			t.Errorf("dismissed after resolve = %v, %v; want %v", d, err, want)
		}
	})
}

func TestMakoIMAPState(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		steps := []struct {
			folder   string
			set      bool
			validity uint32
			last     uint32
		}{
			{"INBOX", false, 0, 0},
			{"INBOX", true, 7, 100},
			{"INBOX", true, 7, 4294967295},
			{"Sent", true, 4294967295, 1},
			{"Archiv", false, 0, 0},
		}
		want := map[string][2]uint32{}
		for _, s := range steps {
			if s.set {
				if err := db.SetIMAPState(ctx, s.folder, s.validity, s.last); err != nil {
					t.Fatal(err)
				}
				want[s.folder] = [2]uint32{s.validity, s.last}
			}
			for folder, w := range want {
				v, l, err := db.IMAPState(ctx, folder)
				if err != nil || v != w[0] || l != w[1] {
					t.Errorf("%s: %d %d %v, want %v", folder, v, l, err, w)
				}
			}
			if v, l, err := db.IMAPState(ctx, "Archiv"); err != nil || v != 0 || l != 0 {
				t.Errorf("unknown folder: %d %d %v", v, l, err)
			}
		}
	})
}

func TestMakoMails(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		m := func(src, folder, msgID string, dir mako.Direction, at time.Time, subject string) mako.Mail {
			return mako.Mail{Source: src, Folder: folder, Direction: dir, MessageID: msgID, Date: at, From: "Sender@Netz-A.de",
				FromName: "Netz A", To: []string{"b@us.de", "a@us.de"}, Subject: subject, Text: "Hallo", Attachments: []string{"x.edi"}}
		}
		batches := []struct {
			mails []mako.Mail
			added int
		}{
			{[]mako.Mail{
				m("imap:INBOX:1:1", "INBOX", "<1@a>", mako.In, t0, "one"),
				m("imap:INBOX:1:2", "INBOX", "<2@a>", mako.In, t0.Add(2*time.Hour), "two"),
				m("imap:INBOX:1:2", "INBOX", "<2b@a>", mako.In, t0, "same source in the batch"),
				m("imap:Sent:1:1", "Sent", "<1@a>", mako.Out, t0.Add(time.Hour), "same id, other folder"),
			}, 3},
			{[]mako.Mail{
				m("imap:INBOX:1:1", "INBOX", "<x@a>", mako.In, t0, "same source"),
				m("imap:INBOX:2:9", "INBOX", "<1@a>", mako.In, t0, "same folder and message id"),
				m("drop/1.eml", "INBOX", "", mako.In, t0.Add(time.Hour), "no id"),
				m("drop/2.eml", "INBOX", "", mako.In, t0.Add(time.Hour), "no id either"),
			}, 2},
		}
		for i, b := range batches {
			n, err := db.IndexMails(ctx, b.mails)
			if err != nil || n != b.added {
				t.Errorf("batch %d: added %d, %v; want %d", i, n, err, b.added)
			}
		}
		in, err := db.Mails(ctx, mako.In, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, x := range in {
			subjects = append(subjects, x.Subject)
		}
		if !slices.Equal(subjects, []string{"two", "no id either", "no id"}) {
			t.Errorf("in mails since t0+1h = %q", subjects)
		}
		x := in[0]
		if x.From != "sender@netz-a.de" || x.FromName != "Netz A" || !slices.Equal(x.To, []string{"b@us.de", "a@us.de"}) ||
			!slices.Equal(x.Attachments, []string{"x.edi"}) || x.Text != "Hallo" || !x.Date.Equal(t0.Add(2*time.Hour)) ||
			x.Source != "imap:INBOX:1:2" || x.Folder != "INBOX" || x.MessageID != "<2@a>" || x.Direction != mako.In {
			t.Errorf("mail = %+v", x)
		}
		if out, err := db.Mails(ctx, mako.Out, time.Time{}); err != nil || len(out) != 1 || out[0].Subject != "same id, other folder" {
			t.Errorf("out mails = %+v, %v", out, err)
		}
		srcs, err := db.MailSources(ctx, "imap:INBOX:")
		if err != nil || fmt.Sprint(srcs) != fmt.Sprint(map[string]bool{"imap:INBOX:1:1": true, "imap:INBOX:1:2": true}) {
			t.Errorf("sources = %v, %v", srcs, err)
		}
		if _, err := db.IndexMails(ctx, []mako.Mail{{Source: "", Direction: mako.In}}); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("mail without source: %v", err)
		}
	})
}

// TestMakoMigrationDownUp rolls the market-communication migration back and
// applies it again on a database that has the earlier schema.
// rawMakoRows writes a registry import of partner A with a contact, and an
// indexed PARTIN to A as the newest message of its stream, with the SQL of
// the schema of migration 20261124000001: tests of later migrations fill the
// tables as they were before them, which the repository of today no longer
// writes (it also keeps mako_versions and the columns mako_edi_latest copies).
func rawMakoRows(t *testing.T, db *sqldb.DB, hash string) {
	t.Helper()
	ctx := context.Background()
	for _, w := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO mako_registry_imports (source, hash, at, partners, added, removed, contacts_added, contacts_ended) " +
			"VALUES ('api', ?, ?, 1, 1, 0, 1, 0)", []any{hash, t0}},
		{"INSERT INTO mako_partners (mp_id, name, import_id) SELECT ?, 'A', MAX(id) FROM mako_registry_imports", []any{mpA}},
		{"INSERT INTO mako_contacts (mp_id, email, valid_from) VALUES (?, 'a@a.de', ?)", []any{mpA, t0}},
		{"INSERT INTO mako_edi_files (object_key, etag, size, direction, seen_at, interchange_ref) VALUES ('outbox/1', 'e', 100, 'out', ?, 'R')",
			[]any{t0}},
		{"INSERT INTO mako_edi_messages (file_id, seq, direction, partner_mp_id, type, process_id, document_no, interchange_ref, at, stream) " +
			"SELECT id, 0, 'out', ?, 'PARTIN', '37000', 'D', 'R', ?, 'partin_out' FROM mako_edi_files", []any{mpA, t0}},
		{"INSERT INTO mako_edi_latest (partner_mp_id, stream, message_id, at) SELECT ?, 'partin_out', id, ? FROM mako_edi_messages",
			[]any{mpA, t0}},
	} {
		if err := sqldb.Exec(ctx, db, w.q, w.args...); err != nil {
			t.Fatalf("%s: %v", w.q, err)
		}
	}
}

// rawEDIFiles indexes files as the schema of migration 20261124000001 held
// them (a file row and its message rows), with that schema's SQL; a file
// indexed before takes the ETag given. See rawMakoRows for why.
func rawEDIFiles(t *testing.T, db *sqldb.DB, files ...mako.EDIFile) {
	t.Helper()
	ctx := context.Background()
	for _, f := range files {
		x := f.Interchange
		if err := sqldb.Exec(ctx, db, "INSERT INTO mako_edi_files (object_key, etag, size, direction, seen_at, interchange_ref, sender, receiver) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (object_key) DO UPDATE SET etag = excluded.etag",
			f.Key, f.ETag, f.Size, string(f.Direction), f.SeenAt, x.Ref, x.Sender, x.Receiver); err != nil {
			t.Fatalf("file %s: %v", f.Key, err)
		}
		partner := x.Sender
		if f.Direction == mako.Out {
			partner = x.Receiver
		}
		for seq, m := range x.Messages {
			if err := sqldb.Exec(ctx, db, "INSERT INTO mako_edi_messages (file_id, seq, direction, partner_mp_id, type, process_id, bgm, "+
				"document_no, interchange_ref, message_ref, at, stream) SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM mako_edi_files "+
				"WHERE object_key = ? ON CONFLICT (file_id, seq) DO NOTHING", seq, string(f.Direction), partner, m.Type, m.ProcessID, m.BGM,
				m.DocumentNo, x.Ref, m.Ref, m.Date, string(mako.StreamOf(f.Direction, m)), f.Key); err != nil {
				t.Fatalf("message %d of %s: %v", seq, f.Key, err)
			}
		}
	}
}

func TestMakoMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261123000001"); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := sqldb.MigrateThrough(ctx, db, "20261124000001"); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				rawMakoRows(t, db, fmt.Sprint(round))
				if _, err := db.NextInterchangeRef(ctx); err != nil {
					t.Fatal(err)
				}
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261124000001"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				for _, table := range []string{"mako_partners", "mako_edi_messages", "mako_ref_seq", "mako_dismissals"} {
					if _, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM "+table); err == nil {
						t.Errorf("round %d: %s survived the rollback", round, table)
					}
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM portfolios"); err != nil || n != "0" {
					t.Errorf("round %d: earlier schema damaged: %s, %v", round, n, err)
				}
			}
		})
	}
}
