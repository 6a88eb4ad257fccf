package sqldb_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// The market-communication data set of a supplier that talks to every DSO
// for a few years: 900 partners, 200,000 EDIFACT files with about 250,000
// messages, 20,000 mails. SCHEDBRIDGE_BENCH_MAKO_FILES scales the files down
// for a quick run.
const (
	benchPartners  = 900
	benchFiles     = 200000
	benchMails     = 20000
	benchBatch     = 500 // files per IndexEDIFiles call, as the sync passes them
	benchMailBatch = 500
)

func benchMPID(p int) string { return fmt.Sprintf("99%011d", 1000+p) }

func benchPartnerEmail(p, n int) string { return fmt.Sprintf("mako%d@netz%03d.de", n, p) }

// benchFile builds file k. Files come in rounds over the partners, one
// partner per file, one minute apart; the kind of a partner's file rotates
// over eight kinds, two of which carry two messages. The answers (APERAK,
// CONTRL) answer the partner's file of the round before.
func benchFile(k int, base time.Time) mako.EDIFile {
	p := k % benchPartners
	round := k / benchPartners
	at := base.Add(time.Duration(k) * time.Minute)
	partner := benchMPID(p)
	ref := fmt.Sprintf("B%012d", k)
	doc := func(k, n int) string { return fmt.Sprintf("DOC%d-%d", k, n) }
	var dir mako.Direction
	var msgs []mako.Message
	switch round % 8 {
	case 0:
		dir, msgs = mako.Out, []mako.Message{partin("1", doc(k, 1), "37000", at)}
	case 1:
		dir, msgs = mako.Out, []mako.Message{utilmd("1", doc(k, 1), "55071", at), utilmd("2", doc(k, 2), "55062", at)}
	case 2:
		v := mako.Accepted
		if round%3 == 0 {
			v = mako.Rejected
		}
		dir, msgs = mako.In, []mako.Message{aperak("1", doc(k, 1), doc(k-2*benchPartners, 1), v, at)}
	case 3:
		dir, msgs = mako.In, []mako.Message{contrl("1", fmt.Sprintf("B%012d", k-benchPartners*2), "", mako.Accepted)}
	case 4:
		dir, msgs = mako.In, []mako.Message{partin("1", doc(k, 1), "37001", at)}
	case 5:
		m1 := mako.Message{Ref: "1", Type: "MSCONS", BGM: "Z21", DocumentNo: doc(k, 1), ProcessID: "13003", Date: at}
		m2 := m1
		m2.Ref, m2.DocumentNo = "2", doc(k, 2)
		dir, msgs = mako.Out, []mako.Message{m1, m2}
	case 6:
		dir, msgs = mako.In, []mako.Message{utilmd("1", doc(k, 1), "55065", at)}
	default:
		dir, msgs = mako.Out, []mako.Message{utilmd("1", doc(k, 1), "55072", at)}
	}
	prefix := "inbox/edifact/"
	if dir == mako.Out {
		prefix = "outbox/edifact/"
	}
	return mako.EDIFile{Key: prefix + ref + ".edi", ETag: "e" + strconv.Itoa(k), Size: 2048, Direction: dir, SeenAt: at,
		Interchange: ic(dir, partner, ref, at, msgs...)}
}

func benchMail(i int, base time.Time) mako.Mail {
	p := (i * 7) % benchPartners
	at := base.Add(time.Duration(i) * 9 * time.Minute)
	m := mako.Mail{Source: fmt.Sprintf("imap:INBOX:1:%d", i), Folder: "INBOX", Direction: mako.In,
		MessageID: fmt.Sprintf("<%d@bench>", i), Date: at, Subject: fmt.Sprintf("Re: PARTIN %d", i), Text: "Sehr geehrte Damen und Herren"}
	if i%2 == 0 {
		// Half of the partners' mails come from an address the registry no
		// longer lists (see loadMakoBench).
		m.From, m.To = benchPartnerEmail(p, i%3), []string{"mako@us.de"}
	} else {
		m.Source, m.Folder, m.Direction = fmt.Sprintf("imap:Sent:1:%d", i), "Sent", mako.Out
		m.From, m.To = "mako@us.de", []string{benchPartnerEmail(p, 1), "archiv@us.de"}
	}
	return m
}

// loadMakoBench fills a database with the data set and returns how long the
// EDIFACT files took.
func loadMakoBench(b *testing.B, db *sqldb.DB) (int, time.Duration) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	files := benchFiles
	if s := os.Getenv("SCHEDBRIDGE_BENCH_MAKO_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		files = n
	}
	// Two imports: the second drops each partner's address 2, which stays
	// as history.
	for round, n := range []int{3, 2} {
		ps := make([]mako.Partner, benchPartners)
		for p := range ps {
			ps[p] = mako.Partner{MPID: benchMPID(p), Name: fmt.Sprintf("Netz %03d", p), ControlArea: "TenneT"}
			for e := range n {
				ps[p].Emails = append(ps[p].Emails, benchPartnerEmail(p, e))
			}
		}
		if _, err := db.ReplacePartners(ctx, registry(fmt.Sprint(round), base.Add(time.Duration(round)*time.Hour), ps...)); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	batch := make([]mako.EDIFile, 0, benchBatch)
	for k := range files {
		batch = append(batch, benchFile(k, base))
		if len(batch) == benchBatch || k == files-1 {
			if err := db.IndexEDIFiles(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
			if (k+1)%20000 == 0 {
				b.Logf("%d files after %s", k+1, time.Since(start).Round(time.Millisecond))
			}
		}
	}
	took := time.Since(start)
	mails := make([]mako.Mail, 0, benchMailBatch)
	for i := range benchMails {
		mails = append(mails, benchMail(i, base))
		if len(mails) == benchMailBatch || i == benchMails-1 {
			if _, err := db.IndexMails(ctx, mails); err != nil {
				b.Fatal(err)
			}
			mails = mails[:0]
		}
	}
	return files, took
}

// BenchmarkMako loads the data set into each backend through IndexEDIFiles
// and IndexMails, then measures MakoFacts (the overview's read) and
// LookupReferences of 200 references (the reply reconciliation's).
func BenchmarkMako(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := sqltest.Open(b, d)
			files, took := loadMakoBench(b, db)
			b.Logf("%s: indexed %d files in %s (%.0f files/s)", d, files, took.Round(time.Millisecond), float64(files)/took.Seconds())

			// MakoFacts reads in full, as the first call after a write does;
			// MakoFactsCached is every later call until the next write.
			for _, cached := range []bool{false, true} {
				name := "MakoFacts"
				if cached {
					name = "MakoFactsCached"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if !cached {
							sqldb.ForgetMakoFacts(db)
						}
						facts, err := db.MakoFacts(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if len(facts) != benchPartners {
							b.Fatalf("facts for %d partners", len(facts))
						}
						if f := facts[benchMPID(1)]; f.Edi == nil || f.Mail == nil || len(f.Latest) == 0 {
							b.Fatalf("facts of partner 1: %+v", f)
						}
					}
				})
			}

			b.Run("LookupReferences", func(b *testing.B) {
				refs := make([]string, 0, 200)
				for i := range 200 {
					k := (i * 997) % files
					switch i % 4 {
					case 0:
						refs = append(refs, fmt.Sprintf("B%012d", k))
					case 1:
						refs = append(refs, fmt.Sprintf("DOC%d-1", k))
					case 2:
						refs = append(refs, fmt.Sprintf("DOC%d-2", k)) // found for the two-message files only
					default:
						refs = append(refs, fmt.Sprintf("UNKNOWN%d", i))
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					got, err := db.LookupReferences(ctx, refs)
					if err != nil {
						b.Fatal(err)
					}
					if len(got) < 100 {
						b.Fatalf("found %d of 200 refs", len(got))
					}
				}
			})
		})
	}
}
