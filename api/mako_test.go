package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

const makoRegistry = `mp_id;name;regelzone;email;bilanzierungsgebiet
9900000000011;Netz Aachen;Amprion;mako@netz-a.de;11YNETZ-A------1
9900000000028;Bayernwerk Nord;TenneT;edi@netz-b.de;
9900000000035;Ostnetz AG;50Hertz;post@netz-c.de;
`

// withMako rebuilds the fixture's server with the market communication wired
// as serve wires it.
func withMako(t *testing.T, f *fixture) {
	t.Helper()
	m, err := jobs.NewMako(f.db, f.bucket, jobs.MakoConfig{
		Now: func() time.Time { return now }, ParseEDI: edifact.Parse, ParseMail: mail.Parse,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Self: jobs.Identity{MPID: "9900000000000", Name: "Beispiel Energie GmbH", Street: "Musterweg 1", PostalCode: "10115",
			City: "Berlin", Email: "mako@beispiel-energie.de", BalancingGroup: "11XSBTEST-BKV--A"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = api.New(api.Config{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		api.Deps{Keys: f.db, Portfolios: f.db, Staging: f.db, Audit: f.db, DB: f.db, Events: f.db, Mako: m})
}

func TestMakoAPI(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		withMako(t, f)

		// The registry: process key only; a bad file changes nothing.
		if r := f.as("report1", "PUT", "/v1/process/market-partners", []byte(makoRegistry)); r.code != 403 {
			t.Fatalf("report key PUT registry: %d %s", r.code, r.body)
		}
		if r := f.as("process", "PUT", "/v1/process/market-partners", []byte("mp_id;name;email\n123;X;a@b.de\n")); r.code != 422 ||
			!strings.Contains(string(r.body), "line 2: mp_id") {
			t.Fatalf("bad registry: %d %s", r.code, r.body)
		}
		r := f.as("process", "PUT", "/v1/process/market-partners", []byte(makoRegistry))
		if r.code != 200 || r.json(t)["result"].(map[string]any)["partners"] != 3.0 {
			t.Fatalf("registry: %d %s", r.code, r.body)
		}
		if r := f.as("report1", "GET", "/v1/process/market-partners", nil); r.code != 200 || r.json(t)["count"] != 3.0 {
			t.Fatalf("report key reads the registry: %d %s", r.code, r.body)
		}

		// Send: 201 with the outbox key; 404, 422 as documented.
		r = f.as("process", "POST", "/v1/process/market-partners/9900000000011/send?stream=partin_out", nil)
		if r.code != 201 || !strings.HasPrefix(r.json(t)["key"].(string), "outbox/edifact/") {
			t.Fatalf("send: %d %s", r.code, r.body)
		}
		for _, c := range []struct {
			path string
			code int
			want string
		}{
			{"/v1/process/market-partners/9900000000097/send?stream=partin_out", 404, "9900000000097"},
			{"/v1/process/market-partners/99/send?stream=partin_out", 422, `"loc":["path","mp_id"]`},
			{"/v1/process/market-partners/9900000000011/send?stream=ack_in", 422, `"loc":["query","stream"]`},
			{"/v1/process/market-partners/9900000000011/send", 422, `"type":"missing"`},
			{"/v1/process/market-partners/9900000000028/send?stream=zuordnungsermaechtigung_out", 422, "balancing area"},
		} {
			if r := f.as("process", "POST", c.path, nil); r.code != c.code || !strings.Contains(string(r.body), c.want) {
				t.Errorf("POST %s: %d %s, want %d with %s", c.path, r.code, r.body, c.code, c.want)
			}
		}
		if r := f.as("report1", "POST", "/v1/process/market-partners/9900000000011/send?stream=partin_out", nil); r.code != 403 {
			t.Errorf("report key sends: %d", r.code)
		}

		// The overview: ranges and orderings, 422 with the validation body.
		for _, c := range []struct {
			query string
			code  int
		}{
			{"", 200}, {"?tage=1", 200}, {"?tage=730&ordnung=kontakt", 200}, {"?ordnung=status", 200},
			{"?tage=0", 422}, {"?tage=731", 422}, {"?tage=x", 422}, {"?ordnung=name", 422},
		} {
			r := f.as("report1", "GET", "/v1/process/market-partners/overview"+c.query, nil)
			if r.code != c.code {
				t.Errorf("overview%s: %d %s, want %d", c.query, r.code, r.body, c.code)
			}
			if c.code == 422 {
				var body struct {
					Detail []struct {
						Loc  []string `json:"loc"`
						Type string   `json:"type"`
					} `json:"detail"`
				}
				if json.Unmarshal(r.body, &body) != nil || len(body.Detail) != 1 || body.Detail[0].Loc[0] != "query" {
					t.Errorf("overview%s: body %s is not the validation body", c.query, r.body)
				}
			}
		}
		var ov mako.Overview
		r = f.as("process", "GET", "/v1/process/market-partners/overview?tage=30&ordnung=kontakt", nil)
		if err := json.Unmarshal(r.body, &ov); err != nil || ov.Tage != 30 || ov.Ordnung != "kontakt" || len(ov.Groups) != 4 {
			t.Fatalf("overview: %v %s", err, r.body)
		}
		if g := ov.Groups[1]; g.ControlArea != "Amprion" || len(g.Partners) != 1 || g.Partners[0].PartinOut.State != mako.StateSent ||
			g.Partners[0].LetzterKontaktAt == nil || g.Partners[0].Status != mako.Yellow {
			t.Errorf("Amprion group = %+v", g)
		}
		if !strings.Contains(string(r.body), `"letzter_kontakt_at":null`) {
			t.Errorf("partners without contact should carry letzter_kontakt_at null: %s", r.body)
		}

		// The reconciliation: 1..90.
		for _, c := range []struct {
			query string
			code  int
		}{{"", 200}, {"?tage=90", 200}, {"?tage=91", 422}, {"?tage=0", 422}} {
			if r := f.as("report1", "GET", "/v1/process/mail/antworten-abgleich"+c.query, nil); r.code != c.code {
				t.Errorf("antworten-abgleich%s: %d %s", c.query, r.code, r.body)
			}
		}
		r = f.as("process", "GET", "/v1/process/mail/antworten-abgleich", nil)
		if body := r.json(t); body["lookback_days"] != 7.0 || body["antworten"] == nil {
			t.Errorf("antworten-abgleich default: %s", r.body)
		}

		// Nachversand: a sync pre-lists what is missing; DELETE returns the
		// pre-listing (section 2.8) and then answers 404.
		if r := f.as("process", "POST", "/v1/process/mako/sync", nil); r.code != 200 || r.json(t)["vormerkungen_noted"] != 5.0 {
			t.Fatalf("sync: %d %s (want 5 pre-listings: all but A's PARTIN)", r.code, r.body)
		}
		r = f.as("report1", "GET", "/v1/process/nachversand/vormerkungen", nil)
		if r.code != 200 || r.json(t)["count"] != 5.0 {
			t.Fatalf("vormerkungen: %d %s", r.code, r.body)
		}
		r = f.as("process", "DELETE", "/v1/process/nachversand/vormerkungen/9900000000028:partin_out", nil)
		var v map[string]any
		if json.Unmarshal(r.body, &v); r.code != 200 || v["mp_id"] != "9900000000028" || v["stream"] != "partin_out" ||
			v["name"] != "Bayernwerk Nord" || v["reason"] == "" || v["noted_at"] != now.UTC().Format(time.RFC3339) {
			t.Fatalf("delete: %d %s", r.code, r.body)
		}
		for _, c := range []struct {
			key  string
			code int
		}{
			{"9900000000028:partin_out", 404}, {"9900000000028", 422}, {"99:partin_out", 422},
			{"9900000000028:ack_in", 422}, {"9900000000099:zuordnungsermaechtigung_out", 404},
		} {
			if r := f.as("process", "DELETE", "/v1/process/nachversand/vormerkungen/"+c.key, nil); r.code != c.code {
				t.Errorf("DELETE %s: %d %s, want %d", c.key, r.code, r.body, c.code)
			}
		}
		if r := f.as("report1", "DELETE", "/v1/process/nachversand/vormerkungen/9900000000035:partin_out", nil); r.code != 403 {
			t.Errorf("report key deletes: %d", r.code)
		}
		// By hand: 201, then 200 with the same pre-listing.
		body := []byte(`{"mp_id":"9900000000028","stream":"partin_out","reason":"Ansprechpartner gewechselt"}`)
		if r := f.as("process", "POST", "/v1/process/nachversand/vormerkungen", body); r.code != 201 {
			t.Fatalf("prelist: %d %s", r.code, r.body)
		}
		if r := f.as("process", "POST", "/v1/process/nachversand/vormerkungen", body); r.code != 200 || r.json(t)["reason"] != "Ansprechpartner gewechselt" {
			t.Fatalf("prelist again: %d %s", r.code, r.body)
		}
		if r := f.as("process", "POST", "/v1/process/nachversand/vormerkungen", []byte(`{"stream":"x"}`)); r.code != 422 {
			t.Fatalf("prelist bad body: %d %s", r.code, r.body)
		}
		// The send run: A's ZE and the PARTIN of B and C go out; B and C
		// have no balancing area, so their ZE stays in the queue.
		r = f.as("process", "POST", "/v1/process/nachversand/senden", nil)
		res := r.json(t)
		if r.code != 200 || res["sent"] != 3.0 || res["failed"] != 2.0 {
			t.Fatalf("send run: %d %s", r.code, r.body)
		}
		for _, x := range res["results"].([]any) {
			v := x.(map[string]any)["vormerkung"].(map[string]any)
			if v["key"] != v["mp_id"].(string)+":"+v["stream"].(string) || v["noted_at"] != now.UTC().Format(time.RFC3339) {
				t.Errorf("send run result's pre-listing = %v, want it as the queue shows it", v)
			}
		}
		if r := f.as("report1", "GET", "/v1/process/nachversand/vormerkungen", nil); r.json(t)["count"] != 2.0 {
			t.Errorf("queue after the send run: %s", r.body)
		}
		if r := f.as("process", "GET", "/v1/process/edifact/fehler", nil); r.code != 200 || r.json(t)["count"] != 0.0 {
			t.Errorf("edifact errors: %d %s", r.code, r.body)
		}
	})
}

// Without the market communication wired, its routes answer 503.
func TestMakoAPIUnwired(t *testing.T) {
	f := newFixture(t, "sqlite", api.Config{})
	if r := f.as("process", "GET", "/v1/process/market-partners/overview", nil); r.code != 503 {
		t.Fatalf("unwired overview: %d %s", r.code, r.body)
	}
}
