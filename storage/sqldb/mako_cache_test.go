package sqldb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// twoReplicas opens one migrated database twice, as two processes would.
func twoReplicas(t *testing.T, d sqldb.Dialect) (a, b *sqldb.DB) {
	t.Helper()
	ctx := context.Background()
	url := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	if d == sqldb.Postgres {
		url = sqltest.PostgresURL(t)
	}
	for _, p := range []**sqldb.DB{&a, &b} {
		db, err := sqldb.Open(ctx, sqldb.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		*p = db
	}
	if _, err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestMakoFactsCache: a replica serves the facts it read while nobody
// writes, and sees every kind of write another replica commits (registry
// import, EDIFACT indexing, mail indexing) on its next call; a caller that
// changes its facts does not change what the next caller gets.
func TestMakoFactsCache(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := twoReplicas(t, d)
			h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
			facts := func() map[string]mako.PartnerFacts {
				t.Helper()
				f, err := a.MakoFacts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			if _, err := b.ReplacePartners(ctx, registry("h1", t0, mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"a@netz-a.de"}})); err != nil {
				t.Fatal(err)
			}
			if f := facts(); len(f) != 1 || f[mpA].Edi != nil {
				t.Fatalf("after the import: %+v", f)
			}

			index(t, b, ediFile("outbox/edifact/1", "e1", mako.Out, ic(mako.Out, mpA, "R1", h(1), partin("1", "P1", "37000", h(1)))))
			f := facts()
			if m, ok := f[mpA].Latest[mako.PartinOut]; !ok || m.DocumentNo != "P1" || f[mpA].Edi == nil {
				t.Fatalf("after indexing a PARTIN: %+v", f[mpA])
			}
			// The caller's copy is its own.
			delete(f[mpA].Latest, mako.PartinOut)
			f[mpA] = mako.PartnerFacts{}
			if m, ok := facts()[mpA].Latest[mako.PartinOut]; !ok || m.DocumentNo != "P1" {
				t.Fatalf("a caller's change reached the cache: %+v", facts()[mpA])
			}

			// The answer changes the verdict of the newest PARTIN only.
			index(t, b, ediFile("inbox/edifact/2", "e1", mako.In, ic(mako.In, mpA, "C1", h(2), aperak("1", "A1", "P1", mako.Rejected, h(2)))))
			if m := facts()[mpA].Latest[mako.PartinOut]; m.Verdict != mako.Rejected {
				t.Fatalf("after the answer: %+v", m)
			}
			// The same file again writes nothing and changes nothing.
			index(t, b, ediFile("inbox/edifact/2", "e1", mako.In, ic(mako.In, mpA, "C1", h(2), aperak("1", "A1", "P1", mako.Rejected, h(2)))))
			// A replaced file that no longer parses takes its answer back.
			index(t, b, mako.EDIFile{Key: "inbox/edifact/2", ETag: "e2", Size: 10, Direction: mako.In, SeenAt: h(3), Error: "UNB missing"})
			if m := facts()[mpA].Latest[mako.PartinOut]; m.Verdict != mako.VerdictNone {
				t.Fatalf("after the answer's file was replaced: %+v", m)
			}

			if n, err := b.IndexMails(ctx, []mako.Mail{{Source: "imap:INBOX:1:1", Folder: "INBOX", Direction: mako.In, MessageID: "<1@a>",
				Date: h(4), From: "a@netz-a.de", To: []string{"mako@us.de"}, Subject: "Re: PARTIN"}}); err != nil || n != 1 {
				t.Fatalf("index mail = %d, %v", n, err)
			}
			if c := facts()[mpA].Mail; c == nil || !c.At.Equal(h(4)) {
				t.Fatalf("after a mail: %+v", c)
			}

			if _, err := b.ReplacePartners(ctx, registry("h2", h(5), mako.Partner{MPID: mpA, Name: "Netz A", Emails: []string{"a@netz-a.de"}},
				mako.Partner{MPID: mpB, Name: "Netz B"})); err != nil {
				t.Fatal(err)
			}
			if f := facts(); len(f) != 2 {
				t.Fatalf("after the second import: %d partners", len(f))
			}
		})
	}
}

// TestConsoleBenchMigrationDownUp reverts the migration of the console's
// benchmark fixes and applies it again: the facts' versions, the copy of the
// newest messages' columns (filled in from the messages indexed before) and
// the index of a day's events come and go with it.
func TestConsoleBenchMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261128000005"); err != nil {
				t.Fatal(err)
			}
			rawMakoRows(t, db, "h")
			newest := func(round int, want, key string) {
				t.Helper()
				facts, err := db.MakoFacts(ctx)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if m := facts[mpA].Latest[mako.PartinOut]; m.DocumentNo != want || m.FileKey != key || m.Type != "PARTIN" ||
					m.ProcessID != "37000" || m.Direction != mako.Out || facts[mpA].Edi != nil && facts[mpA].Edi.What != "PARTIN 37000 gesendet" {
					t.Fatalf("round %d: newest PARTIN of A = %+v, want document %s in %s", round, m, want, key)
				}
			}
			want, key := "D", "outbox/1"
			for round := range 2 {
				if err := sqldb.MigrateThrough(ctx, db, "20261128000006"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_versions"); err != nil || n != "3" {
					t.Fatalf("round %d: versions = %s, %v", round, n, err)
				}
				// The versions start again with their table, which a
				// running process does not live through.
				sqldb.ForgetMakoFacts(db)
				newest(round, want, key)
				want, key = fmt.Sprint("D", round+1), fmt.Sprint("outbox/edifact/", round+1)
				at := t0.Add(time.Duration(round+1) * time.Hour)
				index(t, db, ediFile(key, "e", mako.Out, ic(mako.Out, mpA, fmt.Sprint("R", round+1), at, partin("1", want, "37000", at))))
				newest(round, want, key)
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261128000006"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				for _, q := range []string{"SELECT COUNT(*) FROM mako_versions", "SELECT COUNT(object_key) FROM mako_edi_latest"} {
					if _, err := sqldb.QueryString(ctx, db, q); err == nil {
						t.Errorf("round %d: %q still works after the rollback", round, q)
					}
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_edi_latest"); err != nil || n != "2" { // partin_out and *
					t.Errorf("round %d: newest messages after the rollback = %s, %v", round, n, err)
				}
			}
		})
	}
}

// TestEventsOfADayPlan: the TSO answers of one delivery day are read through
// events_kind_day on both backends, also on SQLite without statistics, where
// events_kind_id looked as good and read the answers of every day.
func TestEventsOfADayPlan(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		first := pipeline.NewDay(2025, 11, 24)
		var vals []string
		var args []any
		flush := func() {
			if len(vals) > 0 {
				if err := sqldb.Exec(ctx, db, "INSERT INTO events (at, kind, portfolio_id, subject, delivery_day, data) VALUES "+
					strings.Join(vals, ", "), args...); err != nil {
					t.Fatal(err)
				}
			}
			vals, args = vals[:0], args[:0]
		}
		// A year of a feed: per day a few run events and schedules, the TSO
		// answers and many inbox files without a delivery day.
		for i := range 366 {
			d := first.AddDays(i)
			at := d.AddDays(-1).Start()
			for _, k := range []struct {
				kind string
				day  any
				n    int
			}{{"run.succeeded", d.String(), 6}, {"tso.answer", d.String(), 20}, {"inbox.processed", nil, 40}} {
				for range k.n {
					vals = append(vals, "(?, ?, 'p1', 's', ?, '{}')")
					args = append(args, at, k.kind, k.day)
				}
			}
			if len(vals) > 200 {
				flush()
			}
		}
		flush()
		day := first.AddDays(365)
		for _, q := range []pipeline.EventQuery{
			{Kind: "tso.answer", Day: &day, Limit: 10000},
			{Kind: "tso.answer", Portfolio: "p1", Day: &day, Limit: 10000},
		} {
			plan, err := sqldb.ExplainEvents(ctx, db, q)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan, "events_kind_day") || strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("%+v: plan does not step into events_kind_day in id order:\n%s", q, plan)
			}
			evs, err := db.Events(ctx, q)
			if err != nil || len(evs) != 20 {
				t.Errorf("%+v: %d events, %v", q, len(evs), err)
			}
		}
	})
}

// TestMakoLatestCopy: whatever is indexed in whatever order (our messages,
// their answers to them before or after them, their own messages, files
// replaced by new content or by a file that no longer parses), every entry
// of mako_edi_latest keeps the columns of the message it points at.
func TestMakoLatestCopy(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 4))
		partners := []string{mpA, mpB, mpC}
		at := func() time.Time { return t0.Add(time.Duration(rng.IntN(30*24*60)) * time.Minute) }
		var keys []string
		n := 0
		file := func() mako.EDIFile {
			n++
			p := partners[rng.IntN(len(partners))]
			ref, doc := fmt.Sprintf("R%05d", n), fmt.Sprintf("D%05d", n)
			when := at()
			// Answers name our references at random, indexed or not yet.
			target := rng.IntN(n + 10)
			switch rng.IntN(6) {
			case 0:
				return ediFile(fmt.Sprintf("outbox/edifact/%05d", n), "e", mako.Out, ic(mako.Out, p, ref, when, partin("1", doc, "37000", when)))
			case 1:
				return ediFile(fmt.Sprintf("outbox/edifact/%05d", n), "e", mako.Out, ic(mako.Out, p, ref, when, utilmd("1", doc, "55071", when),
					utilmd("2", doc+"b", "55062", when)))
			case 2:
				v := mako.Accepted
				if rng.IntN(3) == 0 {
					v = mako.Rejected
				}
				return ediFile(fmt.Sprintf("inbox/edifact/%05d", n), "e", mako.In, ic(mako.In, p, ref, when,
					aperak("1", doc, fmt.Sprintf("D%05d", target), v, when)))
			case 3:
				return ediFile(fmt.Sprintf("inbox/edifact/%05d", n), "e", mako.In, ic(mako.In, p, ref, when,
					contrl("1", fmt.Sprintf("R%05d", target), "", mako.Rejected)))
			case 4:
				return ediFile(fmt.Sprintf("inbox/edifact/%05d", n), "e", mako.In, ic(mako.In, p, ref, when, partin("1", doc, "37001", when)))
			}
			// Replace an indexed file: new content, or one that no longer parses.
			if len(keys) == 0 {
				return ediFile(fmt.Sprintf("outbox/edifact/%05d", n), "e", mako.Out, ic(mako.Out, p, ref, when, partin("1", doc, "37000", when)))
			}
			key := keys[rng.IntN(len(keys))]
			if rng.IntN(2) == 0 {
				return mako.EDIFile{Key: key, ETag: fmt.Sprint("x", n), Size: 10, Direction: mako.Out, SeenAt: when, Error: "UNB missing"}
			}
			dir := mako.Out
			if strings.HasPrefix(key, "inbox/") {
				dir = mako.In
			}
			msg := partin("1", doc, "37000", when)
			if dir == mako.In {
				msg = aperak("1", doc, fmt.Sprintf("D%05d", target), mako.Accepted, when)
			}
			return ediFile(key, fmt.Sprint("x", n), dir, ic(dir, p, ref, when, msg))
		}
		for batch := range 30 {
			files := make([]mako.EDIFile, 1+rng.IntN(12))
			for i := range files {
				files[i] = file()
				keys = append(keys, files[i].Key)
			}
			index(t, db, files...)
			drift, err := sqldb.MakoLatestDrift(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if len(drift) > 0 {
				t.Fatalf("batch %d: entries whose copy differs from their message: %v", batch, drift)
			}
		}
		if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM mako_edi_latest WHERE verdict <> ''"); err != nil || n == "0" {
			t.Errorf("no entry with a verdict: the test exercises less than it should (%s, %v)", n, err)
		}
	})
}
