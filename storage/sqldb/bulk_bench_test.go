package sqldb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// BenchmarkBulkStageMetered stages 50,000 metered days of 96 values (4.8
// million values) into an empty table in one bulk transaction and commits
// it, per backend: the database side of the inbox's staging pass without
// the object store and the decoder (ingest/inbox BenchmarkInboxMeteredCSV
// measures the whole path). cpu-ms/op is the CPU time of this process
// (PostgreSQL's server works in its own), which unlike the wall time does
// not depend on what else runs on the machine.
func BenchmarkBulkStageMetered(b *testing.B) {
	const days, batch = 50000, 2000
	rng := rand.New(rand.NewPCG(1, 2))
	entries := make([]pipeline.MeteredEntry, days)
	for i := range entries {
		vals := make([]float64, 96)
		for j := range vals {
			vals[j] = float64(rng.IntN(5_000_000)) / 1000
		}
		entries[i] = pipeline.MeteredEntry{Malo: fmt.Sprintf("%011d", 10000000000+i/10),
			Day: pipeline.NewDay(2026, 11, 10+i%10), Unit: pipeline.KWH, Values: vals}
	}
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			var cpu time.Duration
			for i := range b.N {
				b.StopTimer()
				db := sqltest.Open(b, d)
				p := pipeline.Portfolio{ID: "p1", Name: "Bench", ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}
				if _, err := db.PutPortfolio(ctx, p, t0); err != nil {
					b.Fatal(err)
				}
				f, ok, err := db.ClaimInboxFile(ctx, inboxFile(fmt.Sprintf("inbox/p1/metered-data/%d.csv", i), "e1"), "A", t0, 1<<40)
				if err != nil || !ok {
					b.Fatalf("claim: %v, %v", ok, err)
				}
				b.StartTimer()
				cpu0 := processCPU()
				st, err := db.BeginBulk(ctx, "metered", "p1", t0)
				if err != nil {
					b.Fatal(err)
				}
				for start := 0; start < days; start += batch {
					if err := st.Metered(ctx, entries[start:start+batch]); err != nil {
						b.Fatal(err)
					}
				}
				res, err := st.Commit(ctx, f.ID, "A", "processed/p1/x.csv", audit("p1", "h1"),
					func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
				if err != nil || res.Created != days {
					b.Fatalf("commit = %+v, %v", res, err)
				}
				cpu += processCPU() - cpu0
			}
			b.ReportMetric(float64(days*96*b.N)/b.Elapsed().Seconds(), "values/s")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
