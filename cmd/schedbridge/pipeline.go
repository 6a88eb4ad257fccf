package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// PipelineConfig tunes the day-ahead chain and its scheduler.
type PipelineConfig struct {
	// Scheduler runs the cron stages in serve (one leader per database).
	Scheduler bool `yaml:"scheduler" check:"free"`
	// Schedule maps a stage to its cron spec in Europe/Berlin time ("-" = off).
	Schedule map[string]string `yaml:"schedule" check:"custom"`
	// Attempts and Backoff of a failed stage in a chain.
	Attempts int           `yaml:"attempts" check:"positive"`
	Backoff  time.Duration `yaml:"backoff" check:"positive"`
	// HistoryWeeks is the look-back of the similar-day method for rlm/imsys.
	HistoryWeeks int `yaml:"history_weeks" check:"positive"`
	// HolidayStates maps an MGA to the state (BW, BY, ...) whose holidays its
	// DSO applies to load profiles; unlisted MGAs use national holidays.
	HolidayStates map[string]string `yaml:"holiday_states" check:"custom"`
	// TSOParty and ControlAreaEIC override the receivers and domains of
	// schedule messages per control area.
	TSOParty       map[string]string `yaml:"tso_party" check:"custom"`
	ControlAreaEIC map[string]string `yaml:"control_area_eic" check:"custom"`
	// Compression of the Parquet snapshots: zstd or snappy.
	Compression string `yaml:"compression" check:"oneof=zstd|snappy"`
	// RunHeartbeat is how often a process refreshes the heartbeat of the
	// runs it executes; RunStaleAfter is how old a heartbeat may get before
	// the scheduler's leader fails the run as abandoned. Give every process
	// on one database the same values.
	RunHeartbeat  time.Duration `yaml:"run_heartbeat" check:"positive"`
	RunStaleAfter time.Duration `yaml:"run_stale_after" check:"custom"`
	// LeaderPoll is how often a replica that is not the scheduler's leader
	// tries to become it: the bound of a takeover after the leader died.
	LeaderPoll time.Duration `yaml:"leader_poll" check:"positive"`
	// LakeRetention is how long the lake's Iceberg tables keep a replaced
	// snapshot (time travel, and readers that planned their scan before
	// it was replaced): the daily sweep expires older snapshots, keeping
	// each table's current one, and removes the files only they referenced,
	// and unpublished run files older than this.
	LakeRetention time.Duration `yaml:"lake_retention" check:"custom"`
}

// The conversions below turn the configuration's maps into the runner's
// types. Config.check calls them too, so that a bad entry refuses the start
// with the same message, and they are the one place that parses them.

// holidayStates is pipeline.holiday_states parsed, nil when it is empty.
func (pc PipelineConfig) holidayStates() (map[string]calendar.State, error) {
	if len(pc.HolidayStates) == 0 {
		return nil, nil
	}
	out := map[string]calendar.State{}
	for mga, s := range pc.HolidayStates {
		st, err := calendar.ParseState(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", keyName("pipeline.holiday_states"), mga, err)
		}
		out[mga] = st
	}
	return out, nil
}

// areaEICs parses a map of control areas to EICs, the YAML key's value m;
// nil when it is empty.
func areaEICs(key string, m map[string]string) (map[pipeline.ControlArea]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := map[pipeline.ControlArea]string{}
	for k, v := range m {
		area, ok := pipeline.ParseControlArea(k)
		if !ok {
			return nil, fmt.Errorf("%s: unknown control area %q", keyName(key), k)
		}
		if !pipeline.ValidEIC(v) {
			return nil, fmt.Errorf("%s[%s]: %q is not an EIC", keyName(key), k, v)
		}
		out[area] = v
	}
	return out, nil
}

// stageSpecs is the configured cron schedule per stage, each spec checked
// as the scheduler will read it, so that every command refuses a bad one
// at its start, not serve alone when its scheduler starts.
func (pc PipelineConfig) stageSpecs() (map[pipeline.Stage]string, error) {
	out := map[pipeline.Stage]string{}
	for k, v := range pc.Schedule {
		key := keyName("pipeline.schedule." + k)
		st, err := pipeline.ParseStage(k)
		if err != nil {
			return nil, fmt.Errorf("%s: unknown stage: %s", key, pipeline.MessageOf(err))
		}
		if _, err := jobs.ParseSpecs(map[pipeline.Stage]string{st: v}); err != nil {
			return nil, fmt.Errorf("%s %q: want a cron spec such as \"0 9 * * *\" (minute hour day month weekday, Europe/Berlin) or \"-\" for off: %s",
				key, v, cronReason(err))
		}
		out[st] = v
	}
	return out, nil
}

// cronReason is the cron parser's own words in a refused spec's error.
func cronReason(err error) string {
	msg := pipeline.MessageOf(err)
	if _, after, ok := strings.Cut(msg, ": "); ok {
		return after
	}
	return msg
}

// runnerConfig turns the configuration into the runner's.
func (a *app) runnerConfig() (jobs.Config, error) {
	pc := a.cfg.Pipeline
	c := jobs.Config{Now: a.now, Logger: a.log.With("component", "pipeline"), Attempts: pc.Attempts, Backoff: pc.Backoff,
		Heartbeat: pc.RunHeartbeat}
	c.Forecast.HistoryWeeks = pc.HistoryWeeks
	var err error
	if c.States, err = pc.holidayStates(); err != nil {
		return c, err
	}
	if c.TSOParty, err = areaEICs("pipeline.tso_party", pc.TSOParty); err != nil {
		return c, err
	}
	if c.AreaEIC, err = areaEICs("pipeline.control_area_eic", pc.ControlAreaEIC); err != nil {
		return c, err
	}
	// Overrides complete the defaults rather than replace them.
	if c.TSOParty != nil {
		c.TSOParty = mergeDefaults(jobs.Defaults().TSOParty, c.TSOParty)
	}
	if c.AreaEIC != nil {
		c.AreaEIC = mergeDefaults(jobs.Defaults().AreaEIC, c.AreaEIC)
	}
	return c, nil
}

func mergeDefaults(def, over map[pipeline.ControlArea]string) map[pipeline.ControlArea]string {
	for k, v := range over {
		def[k] = v
	}
	return def
}

// newRunner wires the runner to the database, the lake and the outbox.
func (a *app) newRunner(ctx context.Context, db *sqldb.DB, bucket objstore.Bucket, reg prometheus.Registerer, progress func(pipeline.Stage, int64, int64)) (*jobs.Runner, *lake.Lake, error) {
	cfg, err := a.runnerConfig()
	if err != nil {
		return nil, nil, err
	}
	cfg.Progress = progress
	cat, err := a.openCatalog(ctx, db, bucket)
	if err != nil {
		return nil, nil, err
	}
	lk := a.newLake(bucket, cat)
	cfg.Commit = commit.New(db, cat, a.now)
	r := jobs.New(db, lk, bucket, cfg)
	if reg != nil {
		if err := r.Register(reg); err != nil {
			return nil, nil, err
		}
	}
	return r, lk, nil
}

// newLake is the lake on the bucket, publishing through cat.
func (a *app) newLake(bucket objstore.Bucket, cat *catalog.Catalog) *lake.Lake {
	return lake.New(bucket, lake.Options{Compression: a.cfg.Pipeline.Compression, Now: a.now,
		SpoolDir: filepath.Join(a.cfg.DataDir, "tmp"), Catalog: cat})
}

// openLake opens the database, the bucket and the catalog of a command that
// works on the lake alone; closeLake releases them.
func (a *app) openLake(ctx context.Context) (lk *lake.Lake, cat *catalog.Catalog, closeLake func(), err error) {
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if cat, err = a.openCatalog(ctx, db, bucket); err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return a.newLake(bucket, cat), cat, func() { cat.Close(); db.Close() }, nil
}

// openCatalog opens the lake's Iceberg catalog in the service's database,
// with the bucket as its warehouse. The catalog is shared by the runners of
// a process and lives as long as the database.
func (a *app) openCatalog(ctx context.Context, db *sqldb.DB, bucket objstore.Bucket) (*catalog.Catalog, error) {
	cfg, err := a.catalogConfig(db, bucket)
	if err != nil {
		return nil, err
	}
	return catalog.Open(ctx, cfg)
}

// catalogConfig is the catalog's configuration: the service's database,
// with the bucket as the warehouse.
func (a *app) catalogConfig(db *sqldb.DB, bucket objstore.Bucket) (catalog.Config, error) {
	w, props, err := catalog.Warehouse(bucket)
	if err != nil {
		return catalog.Config{}, err
	}
	return catalog.Config{DB: db.SQL(), Postgres: db.Dialect() == sqldb.Postgres, Warehouse: w, IO: props}, nil
}

// deliveryDay is the --day flag's day, or tomorrow in Europe/Berlin when
// it is empty: the day the day-ahead chain works for.
func (a *app) deliveryDay(flag string) (pipeline.Day, error) {
	if flag == "" {
		return pipeline.DayOf(a.now()).AddDays(1), nil
	}
	return pipeline.ParseDay(flag)
}

// openStores opens the database (migrated) and the bucket; the caller
// closes the database.
func (a *app) openStores(ctx context.Context) (*sqldb.DB, objstore.Bucket, error) {
	db, err := a.openDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := a.openBucket(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, bucket, nil
}

// cmdRun is `schedbridge run STAGE|chain --day D`: one stage (or the whole
// chain) now, with its progress on stderr.
func cmdRun(a *app, fs *flag.FlagSet) action {
	dayFlag := fs.String("day", "", "delivery day YYYY-MM-DD (default: tomorrow in Europe/Berlin; yesterday for kalkulation)")
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want one of forecast, aggregate, open-position, schedules, kalkulation or chain")
		}
		stage := pipeline.StageChain
		var err error
		if pos[0] != "chain" {
			if stage, err = pipeline.ParseStage(pos[0]); err != nil {
				return usagef("unknown stage %q: want forecast, aggregate, open-position, schedules, kalkulation or chain", pos[0])
			}
		}
		day := stage.DefaultDay(pipeline.DayOf(a.now()))
		if *dayFlag != "" {
			if day, err = pipeline.ParseDay(*dayFlag); err != nil {
				return err
			}
		}
		db, bucket, err := a.openStores(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		if stage == pipeline.StageChain || stage == pipeline.StageSchedules {
			// Say which stored portfolio will fail the schedules before the
			// chain spends its time on the stages before them.
			a.checkStored(ctx, db)
			a.warnPastDay(day)
		}
		bar := a.newProgress("stage", false)
		r, _, err := a.newRunner(ctx, db, bucket, nil, stageProgress(bar))
		if err != nil {
			return err
		}
		var run pipeline.Run
		if stage == pipeline.StageChain {
			run, err = r.Orchestrate(ctx, day, "cli")
		} else {
			run, err = r.RunStage(ctx, stage, day, "cli")
		}
		bar.finish()
		if run.ID != 0 {
			sentence := fmt.Sprintf("%s %s: run %d %s", run.Stage, day, run.ID, run.Status)
			attrs := []any{"stage", string(run.Stage), "day", day.String(), "run", run.ID, "status", string(run.Status)}
			if run.FinishedAt != nil {
				secs := run.FinishedAt.Sub(run.StartedAt).Seconds()
				sentence += fmt.Sprintf(" in %.1f s", secs)
				attrs = append(attrs, "duration_s", roundSeconds(secs))
			}
			a.note(sentence, attrs...)
			fmt.Fprintln(a.stdout, string(run.Outputs))
			if err != nil {
				// The run was accepted and failed: exit 1, whatever the
				// kind of its error.
				return workFailed{err}
			}
		}
		return err
	}
}

// warnPastDay warns when schedules are about to be written for a delivery
// day that has passed: the outbox gets them like any other, and
// an operator who mistyped --day should learn it before they are sent.
func (a *app) warnPastDay(day pipeline.Day) {
	today := pipeline.DayOf(a.now())
	if !day.Before(today) {
		return
	}
	a.warn(fmt.Sprintf("delivery day %s is in the past (today is %s in Europe/Berlin): its schedules are written to the outbox all the same; do not send them as day-ahead schedules",
		day, today), "day", day.String(), "today", today.String())
}

// stageProgress feeds the runner's progress of each stage into p.
func stageProgress(p *progress) func(pipeline.Stage, int64, int64) {
	return func(st pipeline.Stage, done, total int64) { p.update(string(st), done, total) }
}
