package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
)

// withMarktdaten rebuilds the fixture's server with the market data and the
// period calculation wired as serve wires them.
func withMarktdaten(t *testing.T, f *fixture) {
	t.Helper()
	clock := func() time.Time { return now }
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	md := jobs.NewMarktdaten(f.db, jobs.MarktdatenConfig{Now: clock, Logger: quiet, DefaultContracts: []string{"11XACME-ENERGIEZ"}})
	r := jobs.New(f.db, nil, f.bucket, jobs.Config{Now: clock, Logger: quiet})
	f.srv = api.New(api.Config{Now: clock, Logger: quiet},
		api.Deps{Keys: f.db, Portfolios: f.db, Staging: f.db, Audit: f.db, DB: f.db, Events: f.db, Marktdaten: md, Calculator: r})
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../ingest/marketdata/testdata/zeitreihen/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMarktdatenAPI(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		// Unwired: 503.
		if r := f.as("process", "GET", "/v1/process/marktrollen", nil); r.code != 503 {
			t.Fatalf("unwired marktrollen: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/kalkulation", nil); r.code != 503 {
			t.Fatalf("unwired kalkulation: %d %s", r.code, r.body)
		}
		withMarktdaten(t, f)
		snapshot := testdata(t, "quellstand.json")

		// The ramp-up snapshot: report key (and process key); 404 before it.
		if r := f.as("report1", "GET", "/v1/process/kundenhochlauf", nil); r.code != 404 {
			t.Fatalf("view before a snapshot: %d %s", r.code, r.body)
		}
		for _, k := range []string{"data1", "mobile"} {
			if r := f.as(k, "POST", "/v1/process/kundenhochlauf/quellstand", snapshot); r.code != 403 {
				t.Errorf("%s key: %d %s", k, r.code, r.body)
			}
		}
		r := f.as("report1", "POST", "/v1/process/kundenhochlauf/quellstand", snapshot)
		if r.code != 200 || r.json(t)["ersetzt"] != true {
			t.Fatalf("snapshot: %d %s", r.code, r.body)
		}
		if r := f.as("process", "POST", "/v1/process/kundenhochlauf/quellstand", snapshot); r.code != 200 || r.json(t)["ersetzt"] != false {
			t.Fatalf("identical snapshot: %d %s", r.code, r.body)
		}
		for _, c := range []struct{ body, want string }{
			{`{"quelle":"x","stand":"2026-11-23T06:00:00+01:00","eintraege":[{"netzbetreiber_mp_id":"9907248000001","bilanzierungsgebiet":"11YR000000000123","regelzone":"Amprion","lieferbeginn":"2026-12-01","anzahl":3,"malo":"12345678901"}]}`,
				`"type":"extra_forbidden"`},
			{`{"quelle":"x","stand":"2026-11-23T06:00:00+01:00","eintraege":[{"netzbetreiber_mp_id":"9907248000001","bilanzierungsgebiet":"11YR000000000123","regelzone":"Nord","lieferbeginn":"2026-12-01","anzahl":3}]}`,
				`"loc":["body","eintraege","0","regelzone"]`},
			{`{"quelle":"x","stand":"gestern","eintraege":[]}`, `"loc":["body","stand"]`},
			{`[]`, `"detail":[`},
		} {
			if r := f.as("report1", "POST", "/v1/process/kundenhochlauf/quellstand", []byte(c.body)); r.code != 422 || !strings.Contains(string(r.body), c.want) {
				t.Errorf("bad snapshot %s: %d %s, want 422 with %s", c.body, r.code, r.body, c.want)
			}
		}
		r = f.as("report1", "GET", "/v1/process/kundenhochlauf?stichtag=2026-11-23", nil)
		if r.code != 200 {
			t.Fatalf("view: %d %s", r.code, r.body)
		}
		view := r.json(t)
		if view["quelle"] != "hochlauf_export.py" || view["summe"].(float64) <= 0 || len(view["nach_netzbetreiber"].([]any)) == 0 {
			t.Errorf("view %s", r.body)
		}
		if r := f.as("process", "GET", "/v1/process/kundenhochlauf/historie", nil); r.code != 200 || len(r.json(t)["snapshots"].([]any)) != 1 {
			t.Errorf("history: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/kundenhochlauf?stichtag=23.11.2026", nil); r.code != 422 {
			t.Errorf("bad stichtag: %d %s", r.code, r.body)
		}

		// Activations: process key; JSON and CSV.
		if r := f.as("report1", "PUT", "/v1/process/zeitreihen/aktivierungen", testdata(t, "aktivierungen.json")); r.code != 403 {
			t.Errorf("report key PUT activations: %d", r.code)
		}
		r = f.as("process", "PUT", "/v1/process/zeitreihen/aktivierungen", testdata(t, "aktivierungen.json"))
		if r.code != 200 || r.json(t)["geaendert"] != true {
			t.Fatalf("activations: %d %s", r.code, r.body)
		}
		r = f.do("PUT", "/v1/process/zeitreihen/aktivierungen", testdata(t, "aktivierungen.csv"), "X-API-Key", f.keys["process"], "Content-Type", "text/csv")
		if r.code != 200 {
			t.Fatalf("CSV activations: %d %s", r.code, r.body)
		}
		if r := f.as("process", "PUT", "/v1/process/zeitreihen/aktivierungen", []byte(`{"aktivierungen":[{"marktrolle":"NB"}]}`)); r.code != 422 ||
			!strings.Contains(string(r.body), `"loc":["body","aktivierungen","0","marktrolle"]`) {
			t.Errorf("bad activation: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/zeitreihen/aktivierungen", nil); r.code != 200 || len(r.json(t)["aktivierungen"].([]any)) == 0 {
			t.Errorf("list activations: %d %s", r.code, r.body)
		}

		// The tree, with filters; reading it records nothing.
		r = f.as("report1", "GET", "/v1/process/marktrollen?stichtag=2026-11-23&marktrolle=BKV&regelzone=Amprion", nil)
		if r.code != 200 {
			t.Fatalf("tree: %d %s", r.code, r.body)
		}
		tree := r.json(t)
		akt := tree["zeitreihen"].(map[string]any)["aktivierungen"].(map[string]any)
		roles := akt["knoten"].([]any)
		if len(roles) != 1 || roles[0].(map[string]any)["marktrolle"] != "BKV" || akt["zaehler"].(map[string]any)["aktiv"].(float64) < 1 {
			t.Errorf("tree %s", r.body)
		}
		for _, q := range []string{"zustand=kaputt", "marktrolle=NB", "regelzone=Nord", "netzbetreiber=123", "bilanzierungsgebiet=x", "stichtag=morgen"} {
			if r := f.as("process", "GET", "/v1/process/marktrollen?"+q, nil); r.code != 422 || !strings.Contains(string(r.body), `"loc":["query"`) {
				t.Errorf("marktrollen?%s: %d %s", q, r.code, r.body)
			}
		}
		events, _ := f.db.Events(t.Context(), pipeline.EventQuery{Limit: 100})
		for _, ev := range events {
			if strings.Contains(ev.Kind, "hochlauf") || strings.Contains(ev.Kind, "marktrollen") {
				t.Errorf("event %s recorded", ev.Kind)
			}
		}

		// Prices.
		day := pipeline.NewDay(2026, 11, 20)
		var pts []string
		for _, us := range day.QuarterStartsMicros() {
			// SMARD counts in milliseconds since the epoch.
			pts = append(pts, fmt.Sprintf("[%d,%s]", time.UnixMicro(us).UnixMilli(), "101.5"))
		}
		smard := []byte(`{"series":[` + strings.Join(pts, ",") + `]}`)
		r = f.as("process", "PUT", "/v1/process/prices/spot", smard)
		if r.code != 200 || r.json(t)["quarter_hours"] != 96.0 || r.json(t)["format"] != "smard-json" {
			t.Fatalf("spot import: %d %s", r.code, r.body)
		}
		if r := f.as("report1", "PUT", "/v1/process/prices/spot", smard); r.code != 403 {
			t.Errorf("report key PUT prices: %d", r.code)
		}
		if r := f.as("process", "PUT", "/v1/process/prices/intraday", smard); r.code != 422 || !strings.Contains(string(r.body), `"loc":["path","kind"]`) {
			t.Errorf("unknown kind: %d %s", r.code, r.body)
		}
		if r := f.as("process", "PUT", "/v1/process/prices/rebap", smard); r.code != 422 {
			t.Errorf("JSON as reBAP: %d %s", r.code, r.body)
		}
		r = f.as("process", "GET", "/v1/process/prices/spot?von=2026-11-20&bis=2026-11-21", nil)
		if r.code != 200 || len(r.json(t)["points"].([]any)) != 96 || r.json(t)["missing"] != 96.0 {
			t.Errorf("price list: %d %s", r.code, r.body)
		}

		// The period calculation: defaults, limits, scoping.
		r = f.as("process", "GET", "/v1/process/kalkulation", nil)
		if r.code != 200 {
			t.Fatalf("kalkulation: %d %s", r.code, r.body)
		}
		k := r.json(t)
		if k["von"] != "2026-11-01" || k["bis"] != "2026-11-21" || len(k["tage"].([]any)) != 21 || k["vollstaendig"] != false {
			t.Errorf("default period: %s", r.body)
		}
		if r := f.as("report1", "GET", "/v1/process/kalkulation?bis=2026-10-31", nil); r.code != 200 ||
			r.json(t)["portfolio"] != "p1" || r.json(t)["von"] != "2026-10-01" {
			t.Errorf("report key: %d %s", r.code, r.body)
		}
		if r := f.as("report1", "GET", "/v1/process/kalkulation?portfolio=p2", nil); r.code != 403 {
			t.Errorf("report key on another portfolio: %d %s", r.code, r.body)
		}
		for _, q := range []string{"von=2026-10-01&bis=2026-11-01", "von=2026-11-10&bis=2026-11-09", "von=2026-11-31", "bis=heute"} {
			if r := f.as("process", "GET", "/v1/process/kalkulation?"+q, nil); r.code != 422 || !strings.Contains(string(r.body), `"detail":[`) {
				t.Errorf("kalkulation?%s: %d %s", q, r.code, r.body)
			}
		}
		if r := f.as("process", "GET", "/v1/process/kalkulation?von=2026-10-01&bis=2026-10-31", nil); r.code != 200 {
			t.Errorf("31 days: %d %s", r.code, r.body)
		}
	})
}
