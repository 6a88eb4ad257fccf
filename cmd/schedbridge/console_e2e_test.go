package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The pages deploy/dev/console/e2e.mjs photographs, each at desktop and at
// phone width.
var consoleScreenshots = []string{"00-kein-zugang", "01-anmelden", "02-lage", "03-laeufe", "04-lauf", "05-eingang",
	"06-fahrplaene", "07-marktpartner", "08-antworten", "09-kalkulation"}

// TestConsoleBrowser runs the operators' web console in a real browser
// against the built binary and a real OpenID Connect provider:
// deploy/dev/console/e2e.mjs signs in a person outside the operator group
// (403) and an operator (in the group), renders every page with the data
// of a chain run on the spring-forward day (92 points per chart), retries a
// failed stage from the page until it turns green, retries a rejected file
// whose cause was fixed, deletes a Nachversand entry, sees a live event
// without a reload, and checks that no page logs an error or a CSP
// violation and no URL carries a token. Afterwards the effects are checked
// here, at the source: the file staged once, the entry gone, the actions
// in the audit trail with the operator's address, no secret in the log.
func TestConsoleBrowser(t *testing.T) {
	shots := screenshotDir(t)
	in := newInstance(t, sqldb.SQLite)
	in.withInbox(false)
	base := browserBase(t, in)
	const clientID, clientSecret = "portal-web", "e2e-client-secret"
	// The last spring-forward day lies in the past, so that the period
	// calculation (past days only) has it too.
	const dstDay, failDay = "2026-03-29", "2026-03-30"
	idp := portaltest.StartIdP(t, portaltest.IdPOptions{
		Web: portaltest.WebClient{ID: clientID, Secret: clientSecret,
			RedirectURIs: []string{base + "/portal/anmelden/sso/callback"}},
		Accounts: []portaltest.Account{
			{Subject: "sub-olga", Email: "olga@firma.test", EmailVerified: true, Name: "Olga Disponentin",
				Groups: []string{"alle", "bk-disponenten"}},
			{Subject: "sub-nora", Email: "nora@firma.test", EmailVerified: true, Name: "Nora Vertrieb", Groups: []string{"alle"}},
		},
	})
	in.env = append(in.env,
		"SCHEDBRIDGE_PORTAL_BASE_URL="+base,
		"SCHEDBRIDGE_PORTAL_OIDC_ISSUER="+idp.Issuer,
		"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID="+clientID,
		"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET="+clientSecret,
		"SCHEDBRIDGE_CONSOLE_OPERATOR_GROUPS=bk-disponenten",
		"SCHEDBRIDGE_INBOX_INTERVAL=1h", "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN=true",
	)

	// The spring-forward day's chain, and a failed aggregate of the next
	// day whose cause (no forecast) is then fixed.
	in.cli(0, "demo", "--locations", "40", "--day", dstDay)
	// Spot prices for all but the last three hours of the day: the
	// Kalkulation page must flag the twelve quarter-hours without one.
	spot := filepath.Join(t.TempDir(), "spot.json")
	var pts []string
	first := time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC) // 00:00 CET
	for q := range 92 - 12 {
		pts = append(pts, fmt.Sprintf("[%d,%.2f]", first.Add(time.Duration(q)*15*time.Minute).UnixMilli(), 60+float64(q%16)*2.5))
	}
	if err := os.WriteFile(spot, []byte(`{"meta_data":{"version":1},"series":[`+strings.Join(pts, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	in.cli(0, "prices", "import", "spot", spot)
	in.cli(0, "run", "kalkulation", "--day", dstDay)
	in.cli(1, "run", "aggregate", "--day", failDay)
	in.cli(0, "run", "forecast", "--day", failDay)
	key := in.setup()
	// A market partner; the sync at start pre-lists what we never sent it
	// (PARTIN and Zuordnungsermaechtigung), and the PARTIN entry is
	// deleted in the browser.
	reg := filepath.Join(t.TempDir(), "dsos.csv")
	if err := os.WriteFile(reg, []byte("mp_id;name;regelzone;email\n9900000000028;Bayernwerk Nord;TenneT;edi@netz-b.de\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.cli(0, "mako", "registry", reg)
	// The partner's reply of this morning, dropped where the sync at start
	// indexes mail: the Antworten page lists it, without a reference.
	mail := filepath.Join(t.TempDir(), "antwort.eml")
	at := time.Now().Add(-time.Hour)
	if err := os.WriteFile(mail, []byte("From: Bayernwerk Nord <edi@netz-b.de>\r\nTo: mako@beispiel-energie.de\r\n"+
		"Subject: Rueckfrage Ansprechpartner\r\nDate: "+at.Format(time.RFC1123Z)+"\r\nMessage-ID: <a1@netz-b.de>\r\n"+
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBitte senden Sie die Kontaktdaten erneut.\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.drop(mail, "inbox/mail/INBOX/antwort.eml")

	srv, logs := in.serve()
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	}()
	if code, _, body := in.do("POST", "/v1/process/nachversand/vormerkungen", key,
		[]byte(`{"mp_id":"9900000000028","stream":"partin_out","reason":"Ansprechpartner gewechselt"}`)); code != 201 && code != 200 {
		t.Fatalf("prelist: %d %v", code, body)
	}
	// A file for a portfolio that does not exist yet is rejected; then the
	// portfolio is created, which fixes the cause.
	waitFor(t, "the inbox's first scan", 30*time.Second, func() bool {
		return in.metric("schedbridge_inbox_scan_duration_seconds_count") >= 1
	})
	csv := filepath.Join(t.TempDir(), "zaehler.csv")
	const rows = 12
	writeCSV(t, csv, rows, 1)
	in.drop(csv, "inbox/p9/metered-data/zaehler.csv")
	if code, _, body := in.do("POST", "/v1/inbox/events", "", []byte(`{"EventName":"s3:ObjectCreated:Put"}`)); code != 204 && code != 200 {
		t.Fatalf("wake: %d %v", code, body)
	}
	waitFor(t, "the file to be rejected", 20*time.Second, func() bool {
		_, _, rejected := in.consoleInbox(key, "rejected")
		return len(rejected) == 1
	})
	in.cli(0, "portfolio", "put", "p9", "--name", "Neun", "--control-areas", "TenneT")

	secrets, runErr := runBrowserScript(t, "console", 4*time.Minute,
		"BASE_URL="+base,
		"SCREENSHOT_DIR="+shots,
		"OPERATOR_LOGIN=sub-olga", "OUTSIDER_LOGIN=sub-nora",
		"DST_DAY="+dstDay, "FAIL_DAY="+failDay, "CALC_FROM=2026-03-27",
		"REJECTED_FILE=zaehler.csv", "PARTNER_NAME=Bayernwerk Nord",
		"PROCESS_KEY="+key,
	)
	if runErr == nil {
		// The effects, read from the source rather than the pages.
		waitFor(t, "the retried file to be staged", 20*time.Second, func() bool { return in.meteredVersions("p9") == rows })
		code, _, b := in.raw("GET", "/v1/process/nachversand/vormerkungen", key, nil)
		if code != 200 || strings.Contains(string(b), `"9900000000028:partin_out"`) || !strings.Contains(string(b), `"9900000000028:zuordnungsermaechtigung_out"`) {
			t.Errorf("the Nachversand queue after the deletion of the PARTIN entry: %d %s", code, b)
		}
	}
	out, _ := in.cli(0, "audit", "list", "--limit", "50")
	stopAndCheckSecrets(t, srv, logs, runErr, secrets, 3, "portal: signed in")
	for _, want := range []string{"POST /v1/console/runs/:id/retry", "POST /v1/console/inbox/retry",
		"DELETE /v1/process/nachversand/vormerkungen/:key"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, want) && strings.Contains(line, "olga@firma.test") {
				found = true
			}
		}
		if !found {
			t.Errorf("the audit trail has no %s by olga@firma.test:\n%s", want, out)
		}
	}
	var names []string
	for _, n := range consoleScreenshots {
		names = append(names, fmt.Sprintf("console-%s-desktop.png", n), fmt.Sprintf("console-%s-phone.png", n))
	}
	checkScreenshots(t, shots, names)
}
