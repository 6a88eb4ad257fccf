package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// Demo portfolio identity. The EICs have the shape of balancing-group codes
// (type X) but belong to nobody.
const (
	demoPortfolio = "demo"
	demoBG        = "11XSBDEMO-BKV--L"
	demoExchange  = "11XSBEXCHANGE--G"
)

// demo creates a demo portfolio on the configured store (by default the
// embedded SQLite file and ./var/bucket), runs the chain for tomorrow and
// prints where everything is.
func cmdDemo(a *app, fs *flag.FlagSet) action {
	n := fs.Int("locations", 1000, "market locations in the demo portfolio")
	dayFlag := fs.String("day", "", "delivery day (default: tomorrow in Europe/Berlin)")
	return noArgs(func(ctx context.Context) error {
		if *n < 1 {
			return usagef("--locations must be at least 1")
		}
		return a.demo(ctx, *n, *dayFlag)
	})
}

func (a *app) demo(ctx context.Context, n int, dayFlag string) error {
	day, err := a.deliveryDay(dayFlag)
	if err != nil {
		return err
	}
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	now := a.now()
	p := pipeline.Portfolio{ID: demoPortfolio, Name: "Demo Energie GmbH", BalancingGroup: demoBG, ExchangeBalancingGroup: demoExchange,
		ControlAreas: []pipeline.ControlArea{pipeline.FiftyHertz, pipeline.TenneT}}
	if _, err := db.PutPortfolio(ctx, p, now); err != nil {
		return err
	}
	sc := jobs.SynthConfig{Portfolio: p.ID, Locations: n, RLMShare: 0.1, Areas: p.ControlAreas, MGAs: 8,
		HistoryWeeks: 8, Day: day, Seed: 2026}
	locs := jobs.SynthLocations(sc)
	audit := func(endpoint string) *pipeline.AuditEntry {
		return &pipeline.AuditEntry{ReceivedAt: now, PortfolioID: p.ID, Endpoint: "demo " + endpoint, InputHash: "demo", StatusCode: 200}
	}
	a.warnPastDay(day)
	a.note(fmt.Sprintf("demo: staging %d market locations (%d%% rlm) in %s ...", len(locs), 10, p.ControlAreas), "locations", len(locs))
	// Staging is most of the demo's time at many locations: one bar over
	// the locations, the metered days of history and the profiles.
	rlm := 0
	for _, l := range locs {
		if l.Slices[0].MeteringType == pipeline.RLM {
			rlm++
		}
	}
	total := int64(len(locs) + rlm*7*sc.HistoryWeeks + 1)
	staging := a.newProgress("task", false)
	defer staging.finish()
	if _, err := db.StageLocations(ctx, audit("master-data"), locs); err != nil {
		return err
	}
	staged := int64(len(locs))
	staging.update("staging", staged, total)
	var batch []pipeline.MeteredEntry
	var entries int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := db.StageMetered(ctx, audit("metered-data"), batch)
		entries += len(batch)
		staged += int64(len(batch))
		staging.update("staging", staged, total)
		batch = batch[:0]
		return err
	}
	if err := jobs.SynthHistory(sc, locs, func(e pipeline.MeteredEntry) error {
		batch = append(batch, e)
		if len(batch) == 2000 {
			return flush()
		}
		return nil
	}); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	profiles := jobs.SynthDSOProfiles(day, 3)
	if _, err := db.StageProfiles(ctx, audit("profiles"), profiles); err != nil {
		return err
	}
	staging.update("staging", total, total)
	staging.finish()
	a.note(fmt.Sprintf("demo: staged %d metered days of rlm history and %d DSO profiles (MGAs %s..%s)",
		entries, len(profiles), jobs.SynthMGA(0), jobs.SynthMGA(2)), "metered_days", entries, "profiles", len(profiles))

	bar := a.newProgress("stage", false)
	r, _, err := a.newRunner(ctx, db, bucket, nil, stageProgress(bar))
	if err != nil {
		return err
	}
	run, err := r.Orchestrate(ctx, day, "demo")
	bar.finish()
	if err != nil {
		return workFailed{fmt.Errorf("demo chain (run %d): %w", run.ID, err)}
	}
	key, err := demoKey(ctx, db, now)
	if err != nil {
		return err
	}
	base := "http://" + a.cfg.Addr
	lakeDir := filepath.Join(a.cfg.DataDir, "bucket", "lake")
	outbox := filepath.Join(a.cfg.DataDir, "bucket", jobs.OutboxPrefix)
	if a.cfg.S3.Endpoint != "" {
		lakeDir = "s3://" + a.cfg.S3.Bucket + "/lake"
		outbox = "s3://" + a.cfg.S3.Bucket + "/" + jobs.OutboxPrefix
	}
	fmt.Fprintf(a.stdout, `
Demo portfolio %q: chain run %d for %s finished in %.1f s.

Schedules (ESS 2.3, one per control area):  %s
Parquet lake as Apache Iceberg tables:       %s/<dataset>/ (docs/lake.md)
  catalog schedbridge, namespace schedbridge, in the service's database.

Start the API:   make run      (or ./bin/schedbridge serve)
A process key (shown once, stored hashed):
  export KEY=%s
Then:
  curl -s -H "X-API-Key: $KEY" '%s/v1/process/positions?day=%s&portfolio=demo'
  curl -s -H "X-API-Key: $KEY" '%s/v1/process/open-position?day=%s&portfolio=demo'
  curl -s -H "X-API-Key: $KEY" '%s/v1/process/schedules?day=%s&portfolio=demo'
  curl -s -H "X-API-Key: $KEY" '%s/v1/process/runs/%d'
  curl -s -H "X-API-Key: $KEY" '%s/v1/console/events?day=%s'

Query the day's current run with DuckDB (the catalog lists its files, so a
re-run never counts twice):
  duckdb -c "select control_area, round(sum(power_mw)/4, 1) as mwh from read_parquet($(./bin/schedbridge lake files forecast_malo --day %s --sql)) group by 1"
Spark, Trino and PyIceberg open the tables through the catalog: docs/lake.md.
`, p.ID, run.ID, day, run.FinishedAt.Sub(run.StartedAt).Seconds(),
		outbox, lakeDir,
		key, base, day, base, day, base, day, base, run.ID, base, day, day)
	return nil
}

// demoKey creates a process key for the demo's read endpoints.
func demoKey(ctx context.Context, db *sqldb.DB, now time.Time) (string, error) {
	id, secret, err := pipeline.NewKey(rand.Reader)
	if err != nil {
		return "", err
	}
	k := pipeline.APIKey{ID: id, Scope: pipeline.ScopeProcess, Label: "demo", CreatedAt: now.UTC()}
	if err := db.CreateKey(ctx, k, pipeline.HashKey(secret)); err != nil {
		return "", err
	}
	return secret, nil
}
