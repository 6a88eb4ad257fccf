package jobs_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// keysUnder lists the bucket keys under prefix.
func keysUnder(t *testing.T, e *env, prefix string) []string {
	t.Helper()
	infos, err := e.bucket.List(context.Background(), prefix, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range infos {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestMarktdatenDrops drops price files and an activation list into the
// inbox, imports them, and builds the tree from them and a ramp-up snapshot.
func TestMarktdatenDrops(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		list, err := os.ReadFile("../ingest/marketdata/testdata/zeitreihen/aktivierungen.csv")
		if err != nil {
			t.Fatal(err)
		}
		snapshot, err := os.ReadFile("../ingest/marketdata/testdata/zeitreihen/quellstand.json")
		if err != nil {
			t.Fatal(err)
		}
		e.put(t, jobs.PricesPrefix+"spot/woche.json", smardDay(day, func(int) float64 { return 95.25 }, 3))
		e.put(t, jobs.PricesPrefix+"rebap/tag.csv", rebapDay(day, "1.234,56", "-12,5"))
		e.put(t, jobs.PricesPrefix+"rebap/kaputt.csv", "Datum;Zeitzone;von;bis;reBAP unterdeckt;reBAP ueberdeckt\n24.11.2026;UTC;00:00;00:15;abc;1,0\n")
		e.put(t, jobs.ZeitreihenPrefix+"liste.csv", string(list))
		e.put(t, jobs.ZeitreihenPrefix+"archiv/alt.json", `{"aktivierungen": []}`)

		md := jobs.NewMarktdaten(e.db, jobs.MarktdatenConfig{Now: e.clock.Now, DefaultContracts: []string{"11XACME-ENERGIEZ"}})
		rep, err := md.SyncDrops(ctx, e.bucket)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Prices) != 3 || len(rep.Zeitreihen) != 1 || rep.Zeitreihen[0].Error != "" {
			t.Fatalf("report %+v", rep)
		}
		var rejected int
		for _, f := range rep.Prices {
			if f.Error != "" {
				rejected++
				if f.Key != jobs.PricesPrefix+"rebap/kaputt.csv" || !strings.Contains(f.Error, "line 2") {
					t.Errorf("rejection %+v", f)
				}
			}
		}
		if rejected != 1 {
			t.Errorf("%d files rejected, want 1", rejected)
		}
		if k := keysUnder(t, e, jobs.PricesPrefix); len(k) != 0 {
			t.Errorf("left in the inbox: %v", k)
		}
		if k := keysUnder(t, e, jobs.ZeitreihenPrefix); len(k) != 1 || !strings.HasSuffix(k[0], "archiv/alt.json") {
			t.Errorf("inbox/zeitreihen after the sync: %v (a subfolder is not read)", k)
		}
		if k := keysUnder(t, e, "processed/prices/"); len(k) != 2 {
			t.Errorf("processed: %v", k)
		}
		rej := keysUnder(t, e, "rejected/prices/rebap/")
		if len(rej) != 2 || !strings.HasSuffix(rej[1], "kaputt.csv.error.json") {
			t.Fatalf("rejected: %v", rej)
		}
		var why struct {
			Error  string
			Detail []map[string]any
		}
		if err := json.Unmarshal(readObject(t, e.bucket, rej[1]), &why); err != nil || len(why.Detail) == 0 {
			t.Errorf("error document %+v, %v", why, err)
		}

		// The prices: 95 of 96 spot quarter-hours (one was null), reBAP with
		// thousands separator and a negative long price.
		spot, err := md.Prices(ctx, "spot", day.Start(), day.End())
		if err != nil || len(spot) != 95 {
			t.Fatalf("spot: %d points, %v", len(spot), err)
		}
		rebap, err := md.Prices(ctx, "rebap", day.Start(), day.End())
		if err != nil || len(rebap) != 96 || rebap[0].Price != 1234.56 || rebap[0].PriceLong != -12.5 {
			t.Fatalf("rebap: %d points, first %+v, %v", len(rebap), rebap, err)
		}

		// A second sync finds nothing new.
		if rep, err := md.SyncDrops(ctx, e.bucket); err != nil || len(rep.Prices)+len(rep.Zeitreihen) != 0 {
			t.Fatalf("second sync: %+v, %v", rep, err)
		}

		// The snapshot records no event; the tree combines it with the list.
		before, err := e.db.Events(ctx, pipeline.EventQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		res, err := md.PutSnapshot(ctx, snapshot, "key_report")
		if err != nil || !res.Ersetzt || res.Summe == 0 {
			t.Fatalf("snapshot: %+v, %v", res, err)
		}
		after, _ := e.db.Events(ctx, pipeline.EventQuery{Limit: 1000})
		if len(after) != len(before) {
			t.Errorf("the snapshot recorded %d events", len(after)-len(before))
		}
		if res, err := md.PutSnapshot(ctx, snapshot, "key_report"); err != nil || res.Ersetzt {
			t.Errorf("identical snapshot: %+v, %v", res, err)
		}
		tree, err := md.Tree(ctx, pipeline.NewDay(2026, 11, 23), zeitreihen.Filter{Netzbetreiber: "9907248000001", Marktrolle: zeitreihen.RoleBKV})
		if err != nil {
			t.Fatal(err)
		}
		if tree.Hochlauf == nil || tree.Hochlauf.Quelle != "hochlauf_export.py" {
			t.Errorf("hochlauf %+v", tree.Hochlauf)
		}
		cells := map[zeitreihen.SeriesType]zeitreihen.State{}
		for _, role := range tree.Zeitreihen.Aktivierungen.Knoten {
			for _, area := range role.Knoten {
				for _, c := range area.Knoten {
					if c.Vertrag != "11XACME-ENERGIEZ" {
						continue
					}
					for _, cell := range c.Zeitreihen {
						cells[cell.Zeitreihentyp] = cell.Zustand
					}
				}
			}
		}
		// SLS activated from 2026-09-01 for the SLP customers; TLS deactivated
		// on 2026-10-01, the day the TLP customers started.
		if cells[zeitreihen.SLS] != zeitreihen.Aktiv || cells[zeitreihen.TLS] != zeitreihen.Fehlt {
			t.Errorf("cells %v", cells)
		}
	})
}

// TestUTILMDActivations reads the series activations of UTILMD messages in
// the EDIFACT inbox with the market-communication sync.
func TestUTILMDActivations(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		data, err := os.ReadFile("../ingest/edifact/testdata/utilmd_two_messages.edi")
		if err != nil {
			t.Fatal(err)
		}
		clk := &fixedClock{t: time.Date(2026, 8, 14, 8, 0, 0, 0, time.UTC)}
		m := e.mako(t, clk)
		key := "inbox/edifact/utilmd_0777.edi"
		e.put(t, key, string(data))
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		acts, err := e.db.Activations(ctx)
		if err != nil || len(acts) != 2 {
			t.Fatalf("activations %+v, %v", acts, err)
		}
		for _, a := range acts {
			if a.Quelle != zeitreihen.SourceUTILMD || a.SourceKey != key || a.NetzbetreiberMPID != "9907248000001" {
				t.Errorf("record %+v", a)
			}
		}
		// Indexed again unchanged: the same two records.
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if acts, _ := e.db.Activations(ctx); len(acts) != 2 {
			t.Errorf("after a second sync: %d records", len(acts))
		}
		// The file replaced by one without activations drops its records.
		e.put(t, key, edi(dsoA, "REF9", "M1", "CONTRL:D:3:UN:2.0b", clk.Now(), "UCI+REF1+"+us+":500+"+dsoA+":500+7"))
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if acts, _ := e.db.Activations(ctx); len(acts) != 0 {
			t.Errorf("after the file changed: %+v", acts)
		}
	})
}
