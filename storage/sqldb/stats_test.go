package sqldb_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestScheduleStats: every recorded version counts as sent, and each is
// counted under the status its answers left it in: the highest-ranking
// answer, not the last to arrive.
func TestScheduleStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		zero := map[pipeline.ScheduleStatus]int64{pipeline.ScheduleSubmitted: 0, pipeline.ScheduleAcknowledged: 0,
			pipeline.ScheduleRejected: 0, pipeline.ScheduleAnomaly: 0, pipeline.ScheduleConfirmed: 0}
		got, err := db.ScheduleStats(ctx)
		if err != nil || got.Sent != 0 || !reflect.DeepEqual(got.ByStatus, zero) {
			t.Fatalf("empty database: %+v, %v", got, err)
		}

		seedPortfolio(t, db, "p1")
		record := func(day pipeline.Day, area pipeline.ControlArea, hash string, version int) int64 {
			t.Helper()
			m, created, err := db.RecordSchedule(ctx, scheduleOn(day, area, hash, version))
			if err != nil || !created {
				t.Fatalf("record %s %s v%d: %v %v", day, area, version, created, err)
			}
			return m.ID
		}
		answer := func(id int64, st pipeline.ScheduleStatus, kind string, at time.Duration) {
			t.Helper()
			if err := db.RecordScheduleAnswer(ctx, id, st, kind, t0.Add(at), "answer", ""); err != nil {
				t.Fatal(err)
			}
		}
		other := pday.AddDays(1)
		tv1 := record(pday, pipeline.TenneT, "A", 1)
		tv2 := record(pday, pipeline.TenneT, "B", 2)
		fv1 := record(pday, pipeline.FiftyHertz, "A", 1)
		ov1 := record(other, pipeline.TenneT, "A", 1)
		record(other, pipeline.FiftyHertz, "A", 1) // no answer yet
		// An unchanged re-run sends nothing and so counts nothing.
		if _, created, err := db.RecordSchedule(ctx, scheduleOn(other, pipeline.FiftyHertz, "A", 2)); err != nil || created {
			t.Fatalf("unchanged re-run: %v %v", created, err)
		}
		answer(tv1, pipeline.ScheduleRejected, "ACK", time.Minute)
		answer(tv2, pipeline.ScheduleConfirmed, "CNF", 2*time.Hour)
		answer(tv2, pipeline.ScheduleAcknowledged, "ACK", 3*time.Hour) // late, outranked by the CNF
		answer(fv1, pipeline.ScheduleAcknowledged, "ACK", time.Minute)
		answer(ov1, pipeline.ScheduleAcknowledged, "ACK", time.Minute)
		answer(ov1, pipeline.ScheduleAnomaly, "ANO", time.Hour)

		got, err = db.ScheduleStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := pipeline.ScheduleStats{Sent: 5, ByStatus: map[pipeline.ScheduleStatus]int64{
			pipeline.ScheduleSubmitted: 1, pipeline.ScheduleAcknowledged: 1, pipeline.ScheduleRejected: 1,
			pipeline.ScheduleAnomaly: 1, pipeline.ScheduleConfirmed: 1,
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
}

// TestStatsMigrationDownUp: the status index comes and goes with its
// migration, and it is what SQLite reads to count the messages, not the
// table.
func TestStatsMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			exists := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'schedule_messages_status'"
			if d == sqldb.Postgres {
				exists = "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'schedule_messages_status'"
			}
			if err := sqldb.MigrateThrough(ctx, db, "20261128000002"); err != nil {
				t.Fatal(err)
			}
			seedPortfolio(t, db, "p1")
			if _, _, err := db.RecordSchedule(ctx, scheduleOn(pday, pipeline.TenneT, "A", 1)); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := sqldb.MigrateThrough(ctx, db, "20261128000003"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				if n, err := sqldb.QueryString(ctx, db, exists); err != nil || n != "1" {
					t.Fatalf("round %d: index after up: %s, %v", round, n, err)
				}
				if s, err := db.ScheduleStats(ctx); err != nil || s.Sent != 1 || s.ByStatus[pipeline.ScheduleSubmitted] != 1 {
					t.Errorf("round %d: stats %+v, %v", round, s, err)
				}
				if d == sqldb.SQLite {
					plan, err := sqldb.ExplainScheduleStats(ctx, db)
					if err != nil || !strings.Contains(plan, "COVERING INDEX schedule_messages_status") {
						t.Errorf("round %d: plan of the count:\n%s\n%v", round, plan, err)
					}
				}
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261128000003"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				if n, err := sqldb.QueryString(ctx, db, exists); err != nil || n != "0" {
					t.Errorf("round %d: index after down: %s, %v", round, n, err)
				}
				if s, err := db.ScheduleStats(ctx); err != nil || s.Sent != 1 {
					t.Errorf("round %d: stats without the index %+v, %v", round, s, err)
				}
			}
		})
	}
}
