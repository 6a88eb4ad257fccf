package sqldb_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// kalkRows builds the rows of a day: every quarter-hour of each portfolio
// and area, with the run in the bought quantity so that a reader can tell
// which run a row came from.
func kalkRows(run int64, day pipeline.Day, portfolios []string, areas []pipeline.ControlArea, quarters int) []kalkulation.Row {
	var rows []kalkulation.Row
	for _, p := range portfolios {
		for _, a := range areas {
			for qh := range quarters {
				r := kalkulation.Row{Portfolio: p, ControlArea: a, Day: day, QH: qh,
					TS: day.Start().Add(time.Duration(qh) * 15 * time.Minute).UTC(), BoughtMW: float64(run), SoldMW: float64(qh) / 4,
					Basis: kalkulation.BasisFahrplan}
				if qh%2 == 0 {
					r.Basis, r.IstMW = kalkulation.BasisIst, -float64(qh)
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// TestPublishKalkulation: each day serves the rows of the run its pointer
// names; a range read spans days of different runs in one call.
func TestPublishKalkulation(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		d1, d2, d3 := pipeline.NewDay(2026, time.March, 28), pipeline.NewDay(2026, time.March, 29), pipeline.NewDay(2026, time.March, 30)
		areas := []pipeline.ControlArea{pipeline.FiftyHertz, pipeline.TenneT} // read order
		if rows, err := db.KalkulationRows(ctx, "", d1, d3); err != nil || rows == nil || len(rows) != 0 {
			t.Errorf("before any publish = %+v, %v", rows, err)
		}
		r1 := createRuns(t, db, pipeline.StageKalkulation, d1, 1)[0]
		r2 := createRuns(t, db, pipeline.StageKalkulation, d2, 2)
		if err := db.PublishKalkulation(ctx, r1, d1, kalkRows(r1, d1, []string{"p2", "p1"}, areas, 3)); err != nil {
			t.Fatal(err)
		}
		if err := db.PublishKalkulation(ctx, r2[0], d2, kalkRows(r2[0], d2, []string{"p1", "p2"}, areas, d2.Intervals())); err != nil {
			t.Fatal(err)
		}
		// The second run of d2 replaces the first: p2 is gone, fewer rows.
		second := kalkRows(r2[1], d2, []string{"p1"}, areas, 2)
		for i := range second {
			second[i].Day = pipeline.Day{} // the publish's day stands for rows without one
		}
		if err := db.PublishKalkulation(ctx, r2[1], d2, second); err != nil {
			t.Fatal(err)
		}

		want := append(kalkRows(r1, d1, []string{"p1", "p2"}, areas, 3), kalkRows(r2[1], d2, []string{"p1"}, areas, 2)...)
		got, err := db.KalkulationRows(ctx, "", d1, d3)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("rows d1..d3 = %+v, %v\nwant %+v", got, err, want)
		}
		p2 := kalkRows(r1, d1, []string{"p2"}, areas, 3)
		for _, c := range []struct {
			name      string
			portfolio string
			from, to  pipeline.Day
			want      []kalkulation.Row
		}{
			{"one portfolio", "p2", d1, d3, p2},
			{"one day", "", d2, d2, want[12:]},
			{"a day with nothing", "", d3, d3, []kalkulation.Row{}},
			{"unknown portfolio", "p9", d1, d3, []kalkulation.Row{}},
		} {
			got, err := db.KalkulationRows(ctx, c.portfolio, c.from, c.to)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s = %+v, %v\nwant %+v", c.name, got, err, c.want)
			}
		}
		if n, _ := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM kalkulation_rows WHERE run_id = ?", r2[0]); n != "0" {
			t.Errorf("%s rows of the replaced run are left", n)
		}
		// The other read models are separate.
		if _, _, err := db.Positions(ctx, "", d1); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("positions after a kalkulation publish: %v", err)
		}

		other := kalkRows(r1, d2, []string{"p1"}, areas, 1)
		badBasis := kalkRows(r1, d1, []string{"p1"}, areas, 1)
		badBasis[1].Basis = kalkulation.BasisGemischt
		badTS := kalkRows(r1, d1, []string{"p1"}, areas, 2)
		badTS[1].TS = badTS[0].TS // TS is the quarter-hour's start, which KalkulationRows computes back
		for _, c := range []struct {
			name string
			run  int64
			day  pipeline.Day
			rows []kalkulation.Row
			kind pipeline.ErrorKind
		}{
			{"row of another day", r1, d1, other, pipeline.Invalid},
			{"basis of a sum", r1, d1, badBasis, pipeline.Invalid},
			{"ts of another quarter-hour", r1, d1, badTS, pipeline.Invalid},
			{"older run", r2[0], d2, nil, pipeline.Conflict},
			{"run of another day", r1, d2, nil, pipeline.Invalid},
			{"quarter-hour outside the day", r1, d1, kalkRows(r1, d1, []string{"p1"}, areas, 97), pipeline.Invalid},
		} {
			if err := db.PublishKalkulation(ctx, c.run, c.day, c.rows); pipeline.KindOf(err) != c.kind {
				t.Errorf("%s: %v, want %s", c.name, err, c.kind)
			}
		}
		if _, err := db.KalkulationRows(ctx, "", d2, d1); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("reversed range: %v", err)
		}
		if got, _ := db.KalkulationRows(ctx, "", d1, d3); !reflect.DeepEqual(got, want) {
			t.Error("a refused publish changed the rows")
		}
	})
}

func quarterValues(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// TestSubmittedSchedules: the quantities are kept with each version; the
// day's submitted schedule of an area is its latest version not rejected.
func TestSubmittedSchedules(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		n := pday.Intervals()
		record := func(portfolio string, area pipeline.ControlArea, hash string, bought, sold []float64) pipeline.ScheduleMessage {
			t.Helper()
			m := schedule(area, hash, 0)
			m.PortfolioID, m.MessageID = portfolio, m.MessageID+"-"+portfolio
			m.BoughtMW, m.SoldMW = bought, sold
			got, created, err := db.RecordSchedule(ctx, m)
			if err != nil || !created {
				t.Fatalf("record %s %s %s: %v, %v", portfolio, area, hash, created, err)
			}
			return got
		}
		b1 := quarterValues(n, func(i int) float64 { return float64(i) * 1.5 })
		s1 := quarterValues(n, func(i int) float64 { return -float64(i) / 3 })
		v1 := record("p1", pipeline.TenneT, "A", b1, s1)
		if !slices.Equal(v1.BoughtMW, b1) || !slices.Equal(v1.SoldMW, s1) {
			t.Errorf("recorded quantities = %v / %v", v1.BoughtMW, v1.SoldMW)
		}
		latest, err := db.LatestSchedule(ctx, "p1", pday, pipeline.TenneT)
		if err != nil || !slices.Equal(latest.BoughtMW, b1) || !slices.Equal(latest.SoldMW, s1) {
			t.Errorf("read back = %v / %v, %v", latest.BoughtMW, latest.SoldMW, err)
		}
		v2 := record("p1", pipeline.TenneT, "B", quarterValues(n, func(int) float64 { return 7 }), quarterValues(n, func(int) float64 { return 0 }))
		// An unchanged re-run writes nothing and returns the stored
		// quantities, not the ones passed.
		same := schedule(pipeline.TenneT, "B", 0)
		same.MessageID += "-p1"
		same.BoughtMW = []float64{99}
		if got, created, err := db.RecordSchedule(ctx, same); err != nil || created || got.BoughtMW[0] != 7 {
			t.Errorf("unchanged re-run = %v %v, %v", got.BoughtMW[:1], created, err)
		}
		a1 := record("p1", pipeline.Amprion, "A", []float64{}, nil) // an empty series is not "not recorded"
		p2 := record("p2", pipeline.TenneT, "A", b1, s1)

		answer := func(id int64, st pipeline.ScheduleStatus, kind string) {
			t.Helper()
			if err := db.RecordScheduleAnswer(ctx, id, st, kind, t0.Add(time.Hour), "answers/x", ""); err != nil {
				t.Fatal(err)
			}
		}
		answer(v2.ID, pipeline.ScheduleRejected, "ACK")  // the TSO refused v2: v1 stands
		answer(a1.ID, pipeline.ScheduleConfirmed, "CNF") // confirmed counts
		answer(p2.ID, pipeline.ScheduleRejected, "ANO")  // nothing of p2 stands

		got, err := db.SubmittedSchedules(ctx, pday)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, fmt.Sprintf("%s/%s/v%d", m.PortfolioID, m.ControlArea, m.Version))
		}
		if want := []string{"p1/Amprion/v1", "p1/TenneT/v1"}; !slices.Equal(ids, want) {
			t.Fatalf("submitted = %v, want %v", ids, want)
		}
		if got[0].BoughtMW == nil || len(got[0].BoughtMW) != 0 || got[0].SoldMW != nil {
			t.Errorf("empty and nil quantities = %#v / %#v", got[0].BoughtMW, got[0].SoldMW)
		}
		if !slices.Equal(got[1].BoughtMW, b1) || !slices.Equal(got[1].SoldMW, s1) || got[1].ID != v1.ID {
			t.Errorf("TenneT fell back to %+v", got[1])
		}
		// A later version not rejected is the submitted one again.
		v3 := record("p1", pipeline.TenneT, "C", b1, b1)
		got, _ = db.SubmittedSchedules(ctx, pday)
		if len(got) != 2 || got[1].ID != v3.ID {
			t.Errorf("after v3: %+v", got)
		}
		if got, err := db.SubmittedSchedules(ctx, pday.AddDays(1)); err != nil || len(got) != 0 {
			t.Errorf("other day = %+v, %v", got, err)
		}
	})
}

// TestKalkulationMigrationDownUp applies the kalkulation migration to a
// database with the earlier schema and data, reverts it and applies it
// again: older schedule messages read with nil quantities, the received
// UTILMD activation files lose their ETag so that the sync reads them again,
// and the rollback leaves the earlier schema and its data intact.
func TestKalkulationMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261124000001"); err != nil {
				t.Fatal(err)
			}
			if err := sqldb.Exec(ctx, db, "INSERT INTO portfolios (id, name, control_areas, created_at, updated_at) "+
				"VALUES ('p1', 'One', 'TenneT', ?, ?)", t0, t0); err != nil {
				t.Fatal(err)
			}
			if err := sqldb.Exec(ctx, db, "INSERT INTO schedule_messages (portfolio_id, delivery_day, control_area, message_id, version, "+
				"file_name, object_key, content_hash, sender, receiver, status, sent_at) "+
				"VALUES ('p1', ?, 'TenneT', 'M1', 1, 'f1.xml', 'outbox/f1.xml', 'h', 's', 'r', 'submitted', ?)", pday.String(), t0); err != nil {
				t.Fatal(err)
			}
			files := []mako.EDIFile{
				ediFile("inbox/edifact/act.edi", "e-act", mako.In, ic(mako.In, mpA, "R1", t0, utilmd("1", "D1", "55062", t0))),
				ediFile("inbox/edifact/deact.edi", "e-deact", mako.In, ic(mako.In, mpA, "R2", t0,
					partin("2", "D2", "37001", t0), utilmd("3", "D3", "55063", t0))),
				ediFile("inbox/edifact/zuordnung.edi", "e-zu", mako.In, ic(mako.In, mpA, "R3", t0, utilmd("4", "D4", "55071", t0))),
				ediFile("outbox/edifact/act.edi", "e-out", mako.Out, ic(mako.Out, mpA, "R4", t0, utilmd("5", "D5", "55062", t0))),
			}
			wantTags := map[string]string{"inbox/edifact/act.edi": "", "inbox/edifact/deact.edi": "",
				"inbox/edifact/zuordnung.edi": "e-zu", "outbox/edifact/act.edi": "e-out"}
			for round := range 2 {
				// Indexed as the schema of the time held them; the second
				// round sets the ETags back.
				rawEDIFiles(t, db, files...)
				if err := sqldb.MigrateThrough(ctx, db, "20261125000001"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				tags, err := db.EDIFileETags(ctx, "")
				if err != nil || !reflect.DeepEqual(tags, wantTags) {
					t.Errorf("round %d: etags = %v, %v\nwant %v", round, tags, err, wantTags)
				}
				old, err := db.SubmittedSchedules(ctx, pday)
				if err != nil || len(old) != 1 || old[0].MessageID != "M1" || old[0].BoughtMW != nil || old[0].SoldMW != nil {
					t.Fatalf("round %d: old schedule = %+v, %v", round, old, err)
				}
				m := schedule(pipeline.TenneT, "h2", 2)
				m.MessageID, m.BoughtMW, m.SoldMW = "M1", []float64{1}, []float64{2}
				if _, _, err := db.RecordSchedule(ctx, m); err != nil {
					t.Fatal(err)
				}
				if _, _, err := db.PutSnapshot(ctx, snapshot("x", 1), "h", "", t0); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ReplaceActivations(ctx, zeitreihen.SourceImport, "import",
					[]zeitreihen.Activation{activation(zeitreihen.SLS, pday, nil, "")}, t0); err != nil {
					t.Fatal(err)
				}
				if _, err := db.PutPrices(ctx, price.Spot, quarterPoints(4, func(int) float64 { return 1 }), "x", t0); err != nil {
					t.Fatal(err)
				}
				runID := insertRun(t, db, pipeline.StageKalkulation)
				if err := db.PublishKalkulation(ctx, runID, pday, kalkRows(runID, pday, []string{"p1"},
					[]pipeline.ControlArea{pipeline.TenneT}, 4)); err != nil {
					t.Fatal(err)
				}

				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261125000001"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				for _, q := range []string{"SELECT COUNT(*) FROM hochlauf_snapshots", "SELECT COUNT(*) FROM zeitreihen_aktivierungen",
					"SELECT COUNT(*) FROM market_prices", "SELECT COUNT(*) FROM kalkulation_rows",
					"SELECT COUNT(bought_mw) FROM schedule_messages", "SELECT COUNT(sold_mw) FROM schedule_messages"} {
					if _, err := sqldb.QueryString(ctx, db, q); err == nil {
						t.Errorf("round %d: %q still works after the rollback", round, q)
					}
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM schedule_messages"); err != nil || n != "2" {
					t.Errorf("round %d: schedule messages after rollback = %s, %v", round, n, err)
				}
				if err := sqldb.Exec(ctx, db, "DELETE FROM schedule_messages WHERE version = 2"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKalkulationRows31Days reads a month of published kalkulation
// rows (31 days, 4 control areas, 96 quarter-hours, each day its own run)
// in one call, as the period calculation does.
func BenchmarkKalkulationRows31Days(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := sqltest.Open(b, d)
			from := pipeline.NewDay(2026, time.January, 1)
			want := 0
			for i := range 31 {
				day := from.AddDays(i)
				run, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageKalkulation, Day: day, StartedAt: t0})
				if err != nil {
					b.Fatal(err)
				}
				rows := kalkRows(run.ID, day, []string{"p1"}, pipeline.ControlAreas, day.Intervals())
				if err := db.PublishKalkulation(ctx, run.ID, day, rows); err != nil {
					b.Fatal(err)
				}
				want += len(rows)
			}
			b.ReportAllocs()
			for b.Loop() {
				rows, err := db.KalkulationRows(ctx, "", from, from.AddDays(30))
				if err != nil || len(rows) != want {
					b.Fatalf("read %d rows of %d, %v", len(rows), want, err)
				}
			}
		})
	}
}
