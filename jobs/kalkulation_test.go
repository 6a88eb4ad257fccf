package jobs_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
)

// smardDay is SMARD chart JSON with one quarter-hourly price per quarter-hour
// of the day; skip lists quarter-hours published as null.
func smardDay(d pipeline.Day, price func(qh int) float64, skip ...int) string {
	var pts []string
	for i, us := range d.QuarterStartsMicros() {
		v := fmt.Sprintf("%g", price(i))
		for _, s := range skip {
			if s == i {
				v = "null"
			}
		}
		// SMARD counts in milliseconds since the epoch.
		pts = append(pts, fmt.Sprintf("[%d,%s]", time.UnixMicro(us).UnixMilli(), v))
	}
	return `{"meta_data":{"version":1},"series":[` + strings.Join(pts, ",") + `]}`
}

// rebapDay is a netztransparenz reBAP export of the day in UTC.
func rebapDay(d pipeline.Day, short, long string) string {
	var b strings.Builder
	b.WriteString("Datum;Zeitzone;von;bis;Datenkategorie;Datentyp;Einheit;reBAP unterdeckt;reBAP ueberdeckt\n")
	for _, us := range d.QuarterStartsMicros() {
		t := time.UnixMicro(us).UTC()
		e := t.Add(15 * time.Minute)
		fmt.Fprintf(&b, "%s;UTC;%s;%s;reBAP;Qualitaetsgesichert;EUR/MWh;%s;%s\n",
			t.Format("02.01.2006"), t.Format("15:04"), e.Format("15:04"), short, long)
	}
	return b.String()
}

// TestKalkulationStage runs the chain for a day, lets the day pass, delivers
// the Ist of one control area completely and of the other partly, imports
// the prices and checks what the kalkulation stage materializes, what the
// period calculation answers and the Parquet dataset.
func TestKalkulationStage(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		sc := e.seed(t, "p1", 24)
		r := e.runner()
		if _, err := r.Orchestrate(ctx, day, "test"); err != nil {
			t.Fatalf("chain: %v", err)
		}
		// The day is not over: refused.
		if _, err := r.RunStage(ctx, pipeline.StageKalkulation, day, "test"); pipeline.KindOf(err) != pipeline.Invalid {
			t.Fatalf("kalkulation of a day not over: %v", err)
		}
		e.clock.set(day.AddDays(1).Start().Add(7 * time.Hour))

		// The Ist: 10 kWh per quarter-hour from every Amprion location, from
		// all TenneT locations but one.
		locs := jobs.SynthLocations(sc)
		count := map[pipeline.ControlArea]int{}
		var ist []pipeline.MeteredEntry
		var late pipeline.MeteredEntry
		for _, l := range locs {
			area := l.Slices[len(l.Slices)-1].ControlArea
			count[area]++
			m := pipeline.MeteredEntry{Day: day, Malo: l.Malo, Unit: pipeline.KWH, Values: constant(day.Intervals(), 10)}
			if area == pipeline.TenneT && late.Malo == "" {
				late = m
				continue
			}
			ist = append(ist, m)
		}
		a := &pipeline.AuditEntry{ReceivedAt: e.clock.Now(), PortfolioID: "p1", Endpoint: "test", InputHash: "ist", StatusCode: 200}
		if _, err := e.db.StageMetered(ctx, a, ist); err != nil {
			t.Fatal(err)
		}
		md := jobs.NewMarktdaten(e.db, jobs.MarktdatenConfig{Now: e.clock.Now})
		spot := func(qh int) float64 { return 80 + float64(qh%4)*10 } // 80, 90, 100, 110 EUR/MWh
		if res, err := md.ImportPrices(ctx, "spot", []byte(smardDay(day, spot)), "test"); err != nil || res.Stored != 96 {
			t.Fatalf("spot import: %+v %v", res, err)
		}
		if res, err := md.ImportPrices(ctx, "rebap", []byte(rebapDay(day, "250,5", "-20")), "test"); err != nil || res.Stored != 96 {
			t.Fatalf("reBAP import: %+v %v", res, err)
		}

		run, err := r.RunStage(ctx, pipeline.StageKalkulation, day, "test")
		if err != nil {
			t.Fatalf("kalkulation: %v", err)
		}
		out := outputs[jobs.KalkulationOutputs](t, run)
		if out.Rows != 2*96 || len(out.Areas) != 2 {
			t.Fatalf("outputs %+v", out)
		}
		for _, ar := range out.Areas {
			want := kalkulation.BasisIst
			if ar.ControlArea == pipeline.TenneT {
				want = kalkulation.BasisFahrplan
			}
			if ar.Basis != want || ar.Locations != count[ar.ControlArea] || !ar.Schedule || ar.ScheduleVersion != 1 {
				t.Errorf("area %+v, want basis %s and %d locations", ar, want, count[ar.ControlArea])
			}
		}

		// The expectation from the documents that went to the TSOs.
		msgs, err := e.db.Schedules(ctx, "p1", day)
		if err != nil {
			t.Fatal(err)
		}
		var want struct{ buy, kunden, ae, kaufEUR, aeEUR, mehr float64 }
		for _, m := range msgs {
			doc, err := fahrplan.ParseSchedule(readObject(t, e.bucket, m.ObjectKey))
			if err != nil {
				t.Fatal(err)
			}
			bought, sold := doc.Balance(bg)
			for q := range bought {
				f := (bought[q] - sold[q]) * 250
				s := spot(q)
				want.buy += bought[q] * 250
				want.kaufEUR += bought[q] * 250 * s / 1000
				k := f
				if m.ControlArea == pipeline.Amprion {
					k = float64(count[pipeline.Amprion]) * 10
				}
				want.kunden += k
				ae := k - f
				want.ae += ae
				reb := 250.5
				if ae < 0 {
					reb = -20
				}
				want.aeEUR += ae * reb / 1000
				want.mehr += ae * (reb - s) / 1000
			}
		}
		res, err := r.Kalkulation(ctx, "", day, day)
		if err != nil {
			t.Fatal(err)
		}
		d := res.Tage[0]
		near := func(name string, got *float64, want float64) {
			t.Helper()
			if got == nil || math.Abs(*got-want) > 0.0051 {
				t.Errorf("%s = %v, want %.2f", name, got, want)
			}
		}
		if d.Mengenbasis != kalkulation.BasisGemischt || res.Summe.Mengenbasis != kalkulation.BasisGemischt || res.Vollstaendig {
			t.Errorf("basis %s/%s vollstaendig %v", d.Mengenbasis, res.Summe.Mengenbasis, res.Vollstaendig)
		}
		if math.Abs(d.FahrplanKaufKWh-want.buy) > 0.001 || math.Abs(d.KundenmengeKWh-want.kunden) > 0.001 ||
			math.Abs(d.AusgleichsenergieKWh-want.ae) > 0.001 {
			t.Errorf("kWh: kauf %.3f kunden %.3f ae %.3f, want %.3f %.3f %.3f", d.FahrplanKaufKWh, d.KundenmengeKWh,
				d.AusgleichsenergieKWh, want.buy, want.kunden, want.ae)
		}
		near("fahrplan_kauf_eur", d.FahrplanKaufEUR, want.kaufEUR)
		near("ausgleichsenergie_eur", d.AusgleichsenergieEUR, want.aeEUR)
		near("mehrkosten", d.AusgleichsenergieMehrkostenEUR, want.mehr)
		if d.FehlendeSpotpreise != 0 || d.FehlendeReBAP != 0 || d.Viertelstunden != 192 {
			t.Errorf("day flags %+v", d.Figures)
		}

		// The Parquet dataset has the same figures per quarter-hour.
		snap, err := e.lake.Latest(ctx, pipeline.DatasetKalkulation, day)
		if err != nil || snap.Rows != 192 || snap.RunID != run.ID {
			t.Fatalf("kalkulation dataset %+v, %v", snap, err)
		}
		var lakeAE, lakeEUR float64
		var nullIst int
		if err := e.lake.Read(ctx, snap, []string{"ausgleichsenergie_kwh", "ausgleichsenergie_eur", "ist_mw"}, func(rec arrowRecord) error {
			ae := rec.Column(0).(*array.Float64)
			eur := rec.Column(1).(*array.Float64)
			ist := rec.Column(2).(*array.Float64)
			for i := 0; i < ae.Len(); i++ {
				lakeAE += ae.Value(i)
				lakeEUR += eur.Value(i)
				if ist.IsNull(i) {
					nullIst++
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if math.Abs(lakeAE-want.ae) > 0.001 || math.Abs(lakeEUR-want.aeEUR) > 0.005 || nullIst != 96 {
			t.Errorf("lake: ae %.3f eur %.2f, %d null ist, want %.3f %.2f 96", lakeAE, lakeEUR, nullIst, want.ae, want.aeEUR)
		}

		// A period with a day the stage has not calculated says so.
		res2, err := r.Kalkulation(ctx, "p1", day.AddDays(-1), day)
		if err != nil {
			t.Fatal(err)
		}
		if len(res2.Tage) != 2 || res2.Tage[0].Mengenbasis != kalkulation.BasisKeine || len(res2.Hinweise) == 0 {
			t.Errorf("period with an uncalculated day: %+v", res2)
		}
		if _, err := r.Kalkulation(ctx, "", day.AddDays(-31), day); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("32 days: %v", err)
		}

		// The late Ist arrives; the stage runs again and replaces its rows:
		// both areas on the Ist, nothing counted twice.
		a.InputHash = "late"
		if _, err := e.db.StageMetered(ctx, a, []pipeline.MeteredEntry{late}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunStage(ctx, pipeline.StageKalkulation, day, "test"); err != nil {
			t.Fatal(err)
		}
		res3, err := r.Kalkulation(ctx, "", day, day)
		if err != nil {
			t.Fatal(err)
		}
		wantKunden := float64(len(locs)) * 10 * 96
		if res3.Summe.Mengenbasis != kalkulation.BasisIst || !res3.Vollstaendig || math.Abs(res3.Summe.KundenmengeKWh-wantKunden) > 0.001 {
			t.Errorf("after the late Ist: basis %s vollstaendig %v kunden %.3f, want ist true %.3f",
				res3.Summe.Mengenbasis, res3.Vollstaendig, res3.Summe.KundenmengeKWh, wantKunden)
		}

		// A missing spot price is flagged, and the money that needs it is null.
		if _, err := md.ImportPrices(ctx, "spot", []byte(smardDay(day.AddDays(-1), spot)), "test"); err != nil {
			t.Fatal(err)
		}
		e.clock.set(day.AddDays(2).Start().Add(7 * time.Hour))
		next := day.AddDays(1)
		if _, err := r.Orchestrate(ctx, next, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunStage(ctx, pipeline.StageKalkulation, next, "test"); err != nil {
			t.Fatal(err)
		}
		res4, err := r.Kalkulation(ctx, "", day, next)
		if err != nil {
			t.Fatal(err)
		}
		n := res4.Tage[1]
		if n.Mengenbasis != kalkulation.BasisFahrplan || n.FehlendeSpotpreise != 192 || n.FahrplanKaufEUR != nil ||
			res4.Summe.GesamtkostenEUR != nil || res4.Vollstaendig {
			t.Errorf("day without prices: %+v, summe gesamt %v", n.Figures, res4.Summe.GesamtkostenEUR)
		}
		if res4.Tage[0].GesamtkostenEUR == nil {
			t.Error("the priced day lost its money figures")
		}
	})
}

func constant(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// TestKalkulationCron: the cron fires the kalkulation for the last three
// past days, oldest first, after the chain for the next day has run.
func TestKalkulationCron(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner()
		if _, err := r.Orchestrate(ctx, day, "test"); err != nil {
			t.Fatal(err)
		}
		s, err := jobs.NewScheduler(r, e.db, jobs.SchedulerConfig{Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if next := s.NextRuns(e.clock.Now())[pipeline.StageKalkulation]; next.In(pipeline.Berlin).Hour() != 7 {
			t.Errorf("kalkulation cron fires next at %s, want 07:00", next)
		}
		e.clock.set(day.AddDays(2).Start().Add(7 * time.Hour)) // two days after the chain's day
		run, err := s.Fire(ctx, pipeline.StageKalkulation)
		if err != nil || run.Day != day.AddDays(1) || run.Trigger != "cron" {
			t.Fatalf("fire: %+v, %v", run, err)
		}
		runs, err := e.db.Runs(ctx, pipeline.RunQuery{Stage: pipeline.StageKalkulation})
		if err != nil || len(runs) != 3 {
			t.Fatalf("kalkulation runs %+v, %v", runs, err)
		}
		// Newest first: yesterday, the chain's day (with its schedules), the day before.
		for i, want := range []pipeline.Day{day.AddDays(1), day, day.AddDays(-1)} {
			if runs[i].Day != want || runs[i].Status != pipeline.RunSucceeded {
				t.Errorf("run %d: %s %s, want %s succeeded", i, runs[i].Day, runs[i].Status, want)
			}
		}
		if o := outputs[jobs.KalkulationOutputs](t, runs[1]); o.Rows != 2*96 {
			t.Errorf("the chain's day: %d rows, want %d", o.Rows, 2*96)
		}
	})
}

// TestKalkulationReadsOldSchedules: a schedule recorded before the
// quantities were kept with it is read from its document in the outbox.
func TestKalkulationReadsOldSchedules(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner()
		if _, err := r.Orchestrate(ctx, day, "test"); err != nil {
			t.Fatal(err)
		}
		v1, err := e.db.LatestSchedule(ctx, "p1", day, pipeline.TenneT)
		if err != nil {
			t.Fatal(err)
		}
		// Version 2 without quantities, its document a copy of version 1's.
		v2 := v1
		v2.ID, v2.Version, v2.BoughtMW, v2.SoldMW = 0, 2, nil, nil
		v2.ObjectKey, v2.ContentHash = v1.ObjectKey+".v2", "recorded-before-quantities"
		e.put(t, v2.ObjectKey, string(readObject(t, e.bucket, v1.ObjectKey)))
		if _, _, err := e.db.RecordSchedule(ctx, v2); err != nil {
			t.Fatal(err)
		}
		e.clock.set(day.AddDays(1).Start().Add(7 * time.Hour))
		run, err := r.RunStage(ctx, pipeline.StageKalkulation, day, "test")
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, a := range outputs[jobs.KalkulationOutputs](t, run).Areas {
			if a.ControlArea == pipeline.TenneT {
				found = a.ScheduleVersion == 2
			}
		}
		if !found {
			t.Fatalf("TenneT not calculated on version 2: %s", run.Outputs)
		}
		var want float64
		for _, v := range v1.BoughtMW {
			want += v * 250
		}
		rows, err := e.db.KalkulationRows(ctx, "p1", day, day)
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for _, row := range rows {
			if row.ControlArea == pipeline.TenneT {
				got += row.BoughtMW * 250
			}
		}
		if want == 0 || math.Abs(got-want) > 0.001 {
			t.Errorf("TenneT bought %.3f kWh from the document, %.3f recorded with version 1", got, want)
		}
	})
}
