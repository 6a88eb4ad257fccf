package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// BenchmarkMakoViews measures the two views at the scale: 900 DSOs,
// 200,000 EDIFACT files (our PARTIN and Zuordnungsermaechtigung, their
// PARTIN, CONTRL and APERAK answers, UTILMD and MSCONS traffic) spread over a
// year, and 20,000 mails citing references. The data is indexed through the
// store as the sync would; the timed part is one overview (365 days) and one
// reconciliation over 90 days.
func BenchmarkMakoViews(b *testing.B) {
	for _, c := range combos {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b, c)
			ctx := context.Background()
			now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
			clk := &fixedClock{t: now}
			// The views read only the index; no file is parsed here.
			m, err := jobs.NewMako(e.db, e.bucket, jobs.MakoConfig{Now: clk.Now,
				ParseEDI:  func([]byte) (*mako.Interchange, error) { return nil, nil },
				ParseMail: func([]byte) (mako.Mail, error) { return mako.Mail{}, nil }})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			loadScale(b, e, now)
			b.Logf("loaded 900 partners, 200,000 files, 20,000 mails in %s", time.Since(start).Round(time.Millisecond))

			b.Run("overview", func(b *testing.B) {
				for b.Loop() {
					ov, err := m.Overview(ctx, 365, mako.OrderStatus)
					if err != nil || ov.Counts[mako.Red]+ov.Counts[mako.Green]+ov.Counts[mako.Yellow]+ov.Counts[mako.Grey] != 900 {
						b.Fatalf("overview: %v %+v", err, ov.Counts)
					}
				}
			})
			b.Run("reconcile90", func(b *testing.B) {
				for b.Loop() {
					r, err := m.Reconcile(ctx, 90)
					if err != nil || len(r.Antworten) == 0 {
						b.Fatalf("reconcile: %v", err)
					}
				}
			})
		})
	}
}

// loadScale indexes the scale data set.
func loadScale(b *testing.B, e *env, now time.Time) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	partners := make([]mako.Partner, 900)
	areas := []string{"50Hertz", "Amprion", "TenneT", "TransnetBW"}
	for i := range partners {
		id := fmt.Sprintf("99%011d", i+1)
		partners[i] = mako.Partner{MPID: id, Name: fmt.Sprintf("Netzbetreiber %03d GmbH", i), ControlArea: areas[i%4],
			Emails: []string{fmt.Sprintf("mako%d@netz%d.de", i, i)}, BalancingArea: fmt.Sprintf("11YNETZ%06d--1", i)[:16]}
	}
	if _, err := e.db.ReplacePartners(ctx, mako.RegistryImport{Source: "bench", Hash: "bench", At: now, Partners: partners}); err != nil {
		b.Fatal(err)
	}
	var ours []string
	batch := make([]mako.EDIFile, 0, 500)
	flush := func() {
		if err := e.db.IndexEDIFiles(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	msg := func(typ, pid, bgm, ref string, at time.Time, ack *mako.Ack) mako.Message {
		m := mako.Message{Ref: "M" + ref, Type: typ, BGM: bgm, DocumentNo: "D" + ref, ProcessID: pid, Date: at, Ack: ack, SegmentCount: 8}
		return m
	}
	for i := 0; i < 200_000; i++ {
		p := partners[rng.IntN(len(partners))]
		at := now.Add(-time.Duration(rng.IntN(365*24*60)) * time.Minute)
		ref := fmt.Sprintf("R%013d", i)
		f := mako.EDIFile{Key: fmt.Sprintf("x/%07d.edi", i), ETag: "e", Size: 900, SeenAt: at}
		ic := &mako.Interchange{Ref: ref, PreparedAt: at, SenderQualifier: "500", ReceiverQualifier: "500"}
		switch k := rng.IntN(10); {
		case k < 4: // ours: PARTIN, ZE, UTILMD, MSCONS
			f.Key, f.Direction = jobs.EDIOutPrefix+f.Key, mako.Out
			ic.Sender, ic.Receiver = us, p.MPID
			typ, pid := [4]string{"PARTIN", "UTILMD", "UTILMD", "MSCONS"}[k], [4]string{"37000", "55071", "55062", "13003"}[k]
			ic.Messages = []mako.Message{msg(typ, pid, "E01", ref, at, nil)}
			ours = append(ours, ref)
		default: // theirs: answers to one of ours, their PARTIN, UTILMD
			f.Key, f.Direction = jobs.EDIInPrefix+f.Key, mako.In
			ic.Sender, ic.Receiver = p.MPID, us
			switch {
			case k < 7 && len(ours) > 0:
				target := ours[rng.IntN(len(ours))]
				verdict := mako.Accepted
				if rng.IntN(20) == 0 {
					verdict = mako.Rejected
				}
				if k == 4 {
					ic.Messages = []mako.Message{msg("CONTRL", "", "", ref, at, &mako.Ack{Verdict: verdict, RefInterchange: target})}
				} else {
					ic.Messages = []mako.Message{msg("APERAK", "", "312", ref, at, &mako.Ack{Verdict: verdict, RefMessage: "M" + target})}
				}
			case k == 7:
				ic.Messages = []mako.Message{msg("PARTIN", "37001", "10", ref, at, nil)}
			default:
				ic.Messages = []mako.Message{msg("UTILMD", "55064", "E01", ref, at, nil)}
			}
		}
		f.Interchange = ic
		batch = append(batch, f)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	mails := make([]mako.Mail, 0, 500)
	for i := 0; i < 20_000; i++ {
		p := partners[rng.IntN(len(partners))]
		at := now.Add(-time.Duration(rng.IntN(365*24*60)) * time.Minute)
		cited := ours[rng.IntN(len(ours))]
		ml := mako.Mail{Source: fmt.Sprintf("bench:%d", i), Folder: "INBOX", Direction: mako.In, MessageID: fmt.Sprintf("%d@bench", i),
			Date: at, From: p.Emails[0], To: []string{"mako@beispiel-energie.de"},
			Subject: "AW: Übertragungsdatei " + cited,
			Text:    "Sehr geehrte Damen und Herren,\n\nzu Ihrer Nachricht mit Referenz " + cited + " und Dokumentennummer XY" + fmt.Sprint(i) + "7 teilen wir mit, dass die Verarbeitung erfolgt ist.\n\nMit freundlichen Grüßen"}
		if i%2 == 1 {
			ml.Direction, ml.Folder, ml.From, ml.To = mako.Out, "Gesendet", "mako@beispiel-energie.de", p.Emails
		}
		mails = append(mails, ml)
		if len(mails) == cap(mails) {
			if _, err := e.db.IndexMails(ctx, mails); err != nil {
				b.Fatal(err)
			}
			mails = mails[:0]
		}
	}
}

// BenchmarkMakoSync measures the sync over real files in the local store:
// "index" drops 2,000 new interchanges (our PARTIN as the writer makes them,
// the DSOs' APERAK answers to them) per iteration and syncs them (list, read,
// parse, index, answer matching); "idle" syncs again with nothing new, which
// is what serve does every interval, over everything indexed so far.
func BenchmarkMakoSync(b *testing.B) {
	e := newEnv(b, combos[0])
	ctx := context.Background()
	clk := &fixedClock{t: time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)}
	m, err := jobs.NewMako(e.db, e.bucket, jobs.MakoConfig{Now: clk.Now, ParseEDI: edifact.Parse, ParseMail: mail.Parse})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	drop := func(count int) {
		for range count / 2 {
			n++
			to := fmt.Sprintf("99%011d", n%900+1)
			ref := fmt.Sprintf("SB%012d", n)
			at := clk.Now().Add(-time.Duration(n) * time.Minute)
			out, err := edifact.WritePARTIN(edifact.PartinDoc{Envelope: edifact.Envelope{Sender: us, Receiver: to, InterchangeRef: ref,
				MessageRef: "M" + ref[2:], DocumentNo: ref, At: at}, ProcessID: "37000", Company: "Beispiel Energie GmbH",
				Street: "Musterweg 1", PostalCode: "10115", City: "Berlin", Country: "DE", ContactName: "Marktkommunikation",
				Email: "mako@beispiel-energie.de", Phone: "+49 30 1234567", EdifactEmail: "edi@beispiel-energie.de"})
			if err != nil {
				b.Fatal(err)
			}
			e.putBytes(b, fmt.Sprintf("%s%07d.edi", jobs.EDIOutPrefix, n), out)
			ans := edi(to, fmt.Sprintf("AP%012d", n), "AP1", "APERAK:D:07B:UN:2.2", at.Add(time.Hour),
				"BGM+312+APDOC"+ref, "DTM+137:"+at.Add(time.Hour).Format("200601021504")+"?+00:303", "RFF+ACE:"+ref,
				"NAD+MR+"+us+"::293", "NAD+MS+"+to+"::293")
			e.putBytes(b, fmt.Sprintf("%s%07d.edi", jobs.EDIInPrefix, n), []byte(ans))
		}
	}
	b.Run("index", func(b *testing.B) {
		files := 0
		for b.Loop() {
			b.StopTimer()
			drop(2000)
			b.StartTimer()
			rep, err := m.Sync(ctx)
			if err != nil || rep.EDIFiles != 2000 || rep.EDIUnparsable != 0 {
				b.Fatalf("sync = %+v, %v", rep, err)
			}
			files += rep.EDIFiles
		}
		b.ReportMetric(float64(files)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if rep, err := m.Sync(ctx); err != nil || rep.EDIFiles != 0 {
				b.Fatalf("idle sync = %+v, %v", rep, err)
			}
		}
		b.ReportMetric(float64(n*2), "files_indexed")
	})
}

func (e *env) putBytes(b *testing.B, key string, data []byte) {
	if err := e.bucket.Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		b.Fatal(err)
	}
}
