package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/ingest/mail/imaptest"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// fixedClock is a settable clock: the market-communication tests move it to
// pass the answer deadline.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

const (
	us   = "9900000000000" // our MP-ID
	dsoA = "9900000000011" // answers everything
	dsoB = "9900000000028" // rejects our PARTIN
	dsoC = "9900000000035" // silent, no balancing area
)

const registryCSV = `BDEW-Codenummer;Marktrolle;Unternehmen;Regelzone;E-Mail;Bilanzierungsgebiet
9900000000011;VNB;Stadtwerke Aachen Netz GmbH;Amprion;mako@netz-a.de;11YNETZ-A------1
9900000000028;VNB;Bayernwerk Nord;TenneT;edi@netz-b.de;11YNETZ-B------2
9900000000035;VNB;Ostnetz AG;50Hertz;post@netz-c.de;
9900000000042;LF;Kein Netzbetreiber AG;Amprion;lf@example.org;
`

func (e *env) mako(t *testing.T, clk *fixedClock, mod ...func(*jobs.MakoConfig)) *jobs.Mako {
	t.Helper()
	cfg := jobs.MakoConfig{
		Now: clk.Now, ParseEDI: edifact.Parse, ParseMail: mail.Parse,
		Self: jobs.Identity{MPID: us, Name: "Beispiel Energie GmbH", Street: "Musterweg 1", PostalCode: "10115", City: "Berlin",
			ContactName: "Marktkommunikation", Email: "mako@beispiel-energie.de", Phone: "+49 30 1234567",
			BalancingGroup: bg},
	}
	for _, m := range mod {
		m(&cfg)
	}
	m, err := jobs.NewMako(e.db, e.bucket, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) put(t *testing.T, key, body string) {
	t.Helper()
	if err := e.bucket.Put(context.Background(), key, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

// edi builds an interchange from the partner to us with the given segments
// between UNH and UNT, with correct counts.
func edi(from, ref, msgRef, msgType string, at time.Time, segs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "UNA:+.? 'UNB+UNOC:3+%s:500+%s:500+%s+%s'", from, us, at.UTC().Format("060102:1504"), ref)
	fmt.Fprintf(&b, "UNH+%s+%s'", msgRef, msgType)
	for _, s := range segs {
		b.WriteString(s + "'")
	}
	fmt.Fprintf(&b, "UNT+%d+%s'UNZ+1+%s'", len(segs)+2, msgRef, ref)
	return b.String()
}

func eml(from, subject, body string, at time.Time) string {
	return "From: Netzbetreiber <" + from + ">\r\nTo: mako@beispiel-energie.de\r\nSubject: " + subject +
		"\r\nDate: " + at.Format(time.RFC1123Z) + "\r\nMessage-ID: <" + fmt.Sprint(at.UnixNano()) + "@" + from + ">\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + body + "\r\n"
}

func rowOf(t *testing.T, ov mako.Overview, id string) mako.OverviewRow {
	t.Helper()
	for _, g := range ov.Groups {
		for _, r := range g.Partners {
			if r.MPID == id {
				return r
			}
		}
	}
	t.Fatalf("no overview row for %s", id)
	return mako.OverviewRow{}
}

// TestMakoEndToEnd runs the market communication over real files on both
// databases and object stores: registry drop, our sends, the DSOs' answers
// and mails, the overview, the reconciliation and the re-send queue.
func TestMakoEndToEnd(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		clk := &fixedClock{t: time.Date(2026, 11, 16, 8, 0, 0, 0, time.UTC)} // a Monday
		m := e.mako(t, clk)
		reg := prometheus.NewRegistry()
		if err := m.Register(reg); err != nil {
			t.Fatal(err)
		}

		e.put(t, jobs.RegistryPrefix+"dsos.csv", registryCSV)
		rep, err := m.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Registry) != 1 || rep.Registry[0].Result == nil || rep.Registry[0].Result.Partners != 3 || rep.Registry[0].Skipped != 1 {
			t.Fatalf("registry sync = %+v", rep.Registry)
		}
		if keys := listKeys(t, e, "inbox/registry/"); len(keys) != 0 {
			t.Fatalf("registry file still in the inbox: %v", keys)
		}
		// Nothing sent yet: all three DSOs have both our streams pre-listed.
		if rep.Noted != 6 {
			t.Fatalf("first sync pre-listed %d, want 6", rep.Noted)
		}

		// We send PARTIN to A and B and the Zuordnungsermaechtigung to A.
		partinA, err := m.Send(ctx, dsoA, mako.PartinOut)
		if err != nil {
			t.Fatal(err)
		}
		partinB, err := m.Send(ctx, dsoB, mako.PartinOut)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Send(ctx, dsoA, mako.ZuordnungOut); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Send(ctx, dsoC, mako.ZuordnungOut); pipeline.KindOf(err) != pipeline.Invalid {
			t.Fatalf("ZE to a DSO without balancing area: %v, want invalid", err)
		}
		if _, err := m.Send(ctx, "9900000000097", mako.PartinOut); pipeline.KindOf(err) != pipeline.NotFound {
			t.Fatalf("send to an unknown DSO: %v, want not found", err)
		}
		if partinA.InterchangeRef == partinB.InterchangeRef {
			t.Fatalf("two sends share the interchange reference %s", partinA.InterchangeRef)
		}
		raw := readObject(t, e.bucket, partinA.Key)
		ic, err := edifact.Parse(raw)
		if err != nil || ic.Receiver != dsoA || ic.Sender != us || ic.Messages[0].Type != "PARTIN" || ic.Messages[0].ProcessID != "37000" {
			t.Fatalf("outbox PARTIN: %+v %v", ic, err)
		}

		// The DSOs answer on the next day.
		clk.Set(time.Date(2026, 11, 17, 9, 0, 0, 0, time.UTC))
		at := clk.Now()
		e.put(t, jobs.EDIInPrefix+"a/aperak.edi", edi(dsoA, "APA0001", "APA1", "APERAK:D:07B:UN:2.2", at,
			"BGM+312+APA-DOC-1", "DTM+137:"+at.Format("200601021504")+"?+00:303", "RFF+ACE:"+partinA.MessageRef,
			"NAD+MR+"+us+"::293", "NAD+MS+"+dsoA+"::293"))
		e.put(t, jobs.EDIInPrefix+"a/partin.edi", edi(dsoA, "PIA0001", "PIA1", "PARTIN:D:20B:UN:1.0f", at,
			"BGM+10+PIA-DOC-1", "DTM+137:"+at.Format("200601021504")+"?+00:303", "RFF+Z13:37001",
			"NAD+MS+"+dsoA+"::293", "NAD+MR+"+us+"::293"))
		e.put(t, jobs.EDIInPrefix+"b/contrl.edi", edi(dsoB, "CTB0001", "CTB1", "CONTRL:D:3:UN:2.0b", at,
			"UCI+"+partinB.InterchangeRef+"+"+us+":500+"+dsoB+":500+4"))
		e.put(t, jobs.EDIInPrefix+"b/broken.edi", "UNB+UNOC:3+"+dsoB+":500+"+us+":500+261117:0900+X'UNH+1+APERAK:D:07B:UN:2.2'")
		e.put(t, jobs.MailDropPrefix+"INBOX/a.eml", eml("mako@netz-a.de", "AW: Ihre PARTIN "+partinA.InterchangeRef,
			"Sehr geehrte Damen und Herren,\n\nIhre Übertragungsdatei "+partinA.InterchangeRef+" haben wir verarbeitet.\n\nMit freundlichen Grüßen", at))
		e.put(t, jobs.MailDropPrefix+"INBOX/c.eml", eml("post@netz-c.de", "Rückfrage",
			"Zu Ihrer Nachricht mit Referenz ZZ99887766 fehlt uns die Anlage.", at.Add(time.Hour)))
		e.put(t, jobs.MailDropPrefix+"INBOX/broken.eml", "this is no mail at all")
		rep, err = m.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// 3 sent files were indexed by Send already; the four inbox files are new.
		if rep.EDIFiles != 4 || rep.EDIUnparsable != 1 || rep.MailFiles != 2 || rep.MailRejected != 1 {
			t.Fatalf("second sync = %+v", rep)
		}
		if got := metricValue(t, reg, "schedbridge_mako_indexed_total", "unparseable"); got != 1 {
			t.Errorf("unparseable EDIFACT files counted %v, want 1", got)
		}
		if got := metricValue(t, reg, "schedbridge_mako_syncs_total", "ok"); got != 2 {
			t.Errorf("syncs counted %v, want 2", got)
		}
		bad, err := m.EDIErrors(ctx, 10)
		if err != nil || len(bad) != 1 || bad[0].Key != jobs.EDIInPrefix+"b/broken.edi" || bad[0].Error == "" {
			t.Fatalf("unparseable files = %+v, %v", bad, err)
		}
		if keys := listKeys(t, e, jobs.EDIInPrefix); len(keys) != 4 {
			t.Fatalf("inbox/edifact holds %v, want all four files kept", keys)
		}

		ov, err := m.Overview(ctx, 365, mako.OrderStatus)
		if err != nil {
			t.Fatal(err)
		}
		a, b, c := rowOf(t, ov, dsoA), rowOf(t, ov, dsoB), rowOf(t, ov, dsoC)
		if a.Status != mako.Green || a.PartinOut.State != mako.StateAccepted || a.AckIn.State != mako.StateAccepted ||
			a.PartinIn.State != mako.StateReceived || a.ZuordnungOut.State != mako.StateSent {
			t.Errorf("DSO A = %+v, want green with all streams done", a)
		}
		if b.Status != mako.Red || b.PartinOut.State != mako.StateRejected || b.AckIn.State != mako.StateRejected {
			t.Errorf("DSO B = %+v, want red: its CONTRL rejected our PARTIN", b)
		}
		if c.Status == mako.Red || c.Status == mako.Green || c.LetzterKontaktAt == nil {
			t.Errorf("DSO C = %+v, want neither red nor green, with the mail as last contact", c)
		}
		if len(ov.Groups) != 4 || ov.Groups[0].ControlArea != "50Hertz" || ov.Groups[1].ControlArea != "Amprion" ||
			ov.Groups[2].ControlArea != "TenneT" || len(ov.Groups[3].Partners) != 0 {
			t.Errorf("groups = %+v", ov.Groups)
		}

		// The reconciliation finds A's cited interchange and not C's reference.
		rec, err := m.Reconcile(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Antworten) != 2 || rec.LookbackDays != 7 {
			t.Fatalf("reconciliation = %+v", rec)
		}
		byFrom := map[string]mako.Reply{}
		for _, r := range rec.Antworten {
			byFrom[r.Sender] = r
		}
		ra := byFrom["mako@netz-a.de"]
		i := slices.IndexFunc(ra.Zitiert, func(z mako.Citation) bool { return z.Referenz == partinA.InterchangeRef })
		if i < 0 || !ra.Zitiert[i].Gefunden || ra.Zitiert[i].Verdict != mako.Accepted || ra.Zitiert[i].BezugTyp != mako.BezugInterchange ||
			ra.MPID != dsoA || ra.Bewertung != mako.BewertungBestaetigt {
			t.Errorf("reply of A = %+v", ra)
		}
		rc := byFrom["post@netz-c.de"]
		j := slices.IndexFunc(rc.Zitiert, func(z mako.Citation) bool { return z.Referenz == "ZZ99887766" })
		if j < 0 || rc.Zitiert[j].Gefunden || rc.Bewertung != mako.BewertungOhneBezug || rc.MPID != dsoC || len(rc.Offen) == 0 {
			t.Errorf("reply of C = %+v", rc)
		}

		// The queue: B's rejected PARTIN and missing ZE, C's two missing
		// streams; A needs nothing.
		list, err := m.Vormerkungen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, v := range list {
			keys = append(keys, v.Key())
		}
		slices.Sort(keys)
		want := []string{dsoB + ":partin_out", dsoB + ":zuordnungsermaechtigung_out", dsoC + ":partin_out", dsoC + ":zuordnungsermaechtigung_out"}
		if !slices.Equal(keys, want) {
			t.Fatalf("pre-listed %v, want %v", keys, want)
		}
		// Deleting one keeps it away on the next sync, as its state is the same.
		if _, err := m.DeleteVormerkung(ctx, dsoC, mako.PartinOut); err != nil {
			t.Fatal(err)
		}
		if rep, err := m.Sync(ctx); err != nil || rep.Noted != 0 || rep.EDIFiles != 0 || rep.MailFiles != 0 {
			t.Fatalf("idle sync = %+v, %v", rep, err)
		}
		if got := metricValue(t, reg, "schedbridge_mako_vormerkungen", ""); got != 3 {
			t.Errorf("queue gauge = %v, want 3", got)
		}
		// The send run sends B's two streams and keeps C's ZE (no balancing area).
		res, err := m.SendPrelisted(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sent, kept := 0, 0
		for _, r := range res {
			if r.Sent != nil {
				sent++
			} else if r.Vormerkung.MPID == dsoC && r.Error != "" {
				kept++
			}
		}
		if sent != 2 || kept != 1 {
			t.Fatalf("send run = %+v", res)
		}
		list, _ = m.Vormerkungen(ctx)
		if len(list) != 1 || list[0].Key() != dsoC+":zuordnungsermaechtigung_out" {
			t.Fatalf("queue after the send run = %+v", list)
		}
		ov, _ = m.Overview(ctx, 365, mako.OrderStatus)
		if b := rowOf(t, ov, dsoB); b.PartinOut.State != mako.StateSent {
			t.Errorf("B's PARTIN after the re-send = %+v, want gesendet", b.PartinOut)
		}
	})
}

// metricValue reads the value of the metric whose labels include the value
// want; want "" reads a gauge without labels.
func metricValue(t *testing.T, reg *prometheus.Registry, name, want string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if want == "" && m.GetGauge() != nil {
				return m.GetGauge().GetValue() // a metric without labels
			}
			for _, l := range m.GetLabel() {
				if l.GetValue() == want {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

func listKeys(t *testing.T, e *env, prefix string) []string {
	t.Helper()
	objs, err := e.bucket.List(context.Background(), prefix, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// imapMailbox adapts ingest/mail's client as cmd/schedbridge does.
type imapMailbox struct{ *mail.Mailbox }

func (b imapMailbox) Fetch(ctx context.Context, folder string, v, after uint32, batch int, fn func(uint32, []byte) error) (uint32, uint32, error) {
	st, err := b.Mailbox.Fetch(ctx, folder, v, after, batch, fn)
	return st.UIDValidity, st.LastUID, err
}

// TestMakoIMAP syncs a real Dovecot mailbox: received and sent folders, the
// position kept between syncs, and mails attributed to the DSO.
func TestMakoIMAP(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	srv := imaptest.Start(t)
	clk := &fixedClock{t: time.Date(2026, 11, 17, 12, 0, 0, 0, time.UTC)}
	m := e.mako(t, clk, func(c *jobs.MakoConfig) {
		c.IMAPFolders = []string{"INBOX", "Gesendet"}
		c.IMAP = func(ctx context.Context) (jobs.Mailbox, error) {
			box, err := mail.DialIMAP(ctx, mail.IMAPConfig{Addr: srv.Addr, Username: srv.User, Password: srv.Password, Security: "none"})
			if err != nil {
				return nil, err
			}
			return imapMailbox{box}, nil
		}
	})
	if _, _, err := m.ImportRegistry(ctx, "test", bytes.NewReader([]byte(registryCSV))); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 17, 8, 0, 0, 0, time.UTC)
	srv.Deliver(t, "INBOX", []byte(eml("mako@netz-a.de", "=?UTF-8?Q?R=C3=BCckmeldung?=", "Grüße aus Aachen", at)))
	multipart := "From: =?ISO-8859-1?Q?Bayernwerk_Nord_M=FCnchen?= <EDI@Netz-B.de>\r\nTo: mako@beispiel-energie.de\r\n" +
		"Subject: =?UTF-8?Q?AW:_=C3=9Cbertragungsdatei_SB000000000042?=\r\nDate: " + at.Add(time.Minute).Format(time.RFC1123Z) + "\r\n" +
		"Message-ID: <mp-1@netz-b.de>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Die =C3=9Cbertragungsdatei wurde gepr=C3=BCft.\r\nMit freundlichen Gr=C3=BC=C3=9Fen\r\n" +
		"--b1\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>HTML</p>\r\n--b1--\r\n"
	srv.Deliver(t, "INBOX", []byte(multipart))
	sent := strings.Replace(eml("mako@beispiel-energie.de", "Unsere PARTIN", "anbei", at.Add(2*time.Hour)), "To: mako@beispiel-energie.de", "To: post@netz-c.de", 1)
	srv.Deliver(t, "Gesendet", []byte(sent))

	rep, err := m.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IMAPMails != 3 {
		t.Fatalf("first IMAP sync = %+v", rep)
	}
	if rep, err := m.Sync(ctx); err != nil || rep.IMAPMails != 0 {
		t.Fatalf("second IMAP sync = %+v, %v", rep, err)
	}
	srv.Deliver(t, "INBOX", []byte(eml("edi@netz-b.de", "Nachtrag", "noch etwas", at.Add(3*time.Hour))))
	if rep, err := m.Sync(ctx); err != nil || rep.IMAPMails != 1 {
		t.Fatalf("third IMAP sync = %+v, %v", rep, err)
	}
	ov, err := m.Overview(ctx, 30, mako.OrderKontakt)
	if err != nil {
		t.Fatal(err)
	}
	a, c := rowOf(t, ov, dsoA), rowOf(t, ov, dsoC)
	if a.LetzterKontakt == nil || !strings.Contains(*a.LetzterKontakt, "Rückmeldung") {
		t.Errorf("A's last contact = %v, want the decoded subject", a.LetzterKontakt)
	}
	if c.LetzterKontaktAt == nil || !c.LetzterKontaktAt.Equal(at.Add(2*time.Hour)) {
		t.Errorf("C's last contact = %v, want the sent mail at %s", c.LetzterKontaktAt, at.Add(2*time.Hour))
	}
	rec, err := m.Reconcile(ctx, 7)
	if err != nil || len(rec.Antworten) != 3 {
		t.Fatalf("reconciliation over IMAP mail = %+v, %v (want the three received, not the sent one)", rec, err)
	}
	// The multipart mail from B: decoded subject and text, B by its address
	// in any case, and the cited reference not found among our messages.
	i := slices.IndexFunc(rec.Antworten, func(r mako.Reply) bool {
		return r.Sender == "edi@netz-b.de" && r.MPID == dsoB && strings.HasPrefix(r.Subject, "AW:")
	})
	if i < 0 {
		t.Fatalf("no reply of B with its subject: %+v", rec.Antworten)
	}
	r := rec.Antworten[i]
	if r.Subject != "AW: Übertragungsdatei SB000000000042" || !strings.Contains(r.Text, "Die Übertragungsdatei wurde geprüft.") ||
		strings.Contains(r.Text, "HTML") || len(r.Zitiert) != 1 || r.Zitiert[0].Gefunden || r.Bewertung != mako.BewertungOhneBezug {
		t.Errorf("multipart reply = %+v", r)
	}
}
