package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
)

// cmdLakeFiles is `schedbridge lake files DATASET --day D [--sql]`: the data
// files of the day's current run as the lake's Iceberg table has it, so that
// a reader without an Iceberg client reads exactly the current run, never a
// glob over every run of the day.
func cmdLakeFiles(a *app, fs *flag.FlagSet) action {
	dayFlag := fs.String("day", "", "delivery day YYYY-MM-DD (default: tomorrow in Europe/Berlin)")
	sqlList := fs.Bool("sql", false, "print one SQL list literal ['...', ...] for DuckDB's read_parquet instead of one file per line")
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want one dataset: %s", strings.Join(lakeDatasets, ", "))
		}
		if pipeline.StageOfDataset(pos[0]) == "" {
			return usagef("unknown dataset %q: want one of %s", pos[0], strings.Join(lakeDatasets, ", "))
		}
		day, err := a.deliveryDay(*dayFlag)
		if err != nil {
			return err
		}
		lk, cat, closeLake, err := a.openLake(ctx)
		if err != nil {
			return err
		}
		defer closeLake()
		s, err := lk.Latest(ctx, pos[0], day)
		if err != nil {
			return err
		}
		paths := make([]string, len(s.Files))
		for i, f := range s.Files {
			paths[i] = readablePath(cat, f.Key)
		}
		if *sqlList {
			quoted := make([]string, len(paths))
			for i, p := range paths {
				quoted[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
			}
			_, err = fmt.Fprintf(a.stdout, "[%s]\n", strings.Join(quoted, ", "))
			return err
		}
		for _, p := range paths {
			if _, err := fmt.Fprintln(a.stdout, p); err != nil {
				return err
			}
		}
		return nil
	}
}

// lakeDatasets are the lake's tables, in the order of the chain.
var lakeDatasets = []string{pipeline.DatasetForecastMalo, pipeline.DatasetPositionControlArea,
	pipeline.DatasetOpenPosition, pipeline.DatasetSchedule, pipeline.DatasetKalkulation}

// readablePath is a file's location as DuckDB and other readers take it: a
// local path for the directory store, the s3:// URI otherwise.
func readablePath(cat *catalog.Catalog, key string) string {
	uri := cat.URI(key)
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return filepath.FromSlash(u.Path)
	}
	return uri
}

// cmdLakeRelocate is `schedbridge lake relocate`: after the data directory
// or the bucket was moved or restored elsewhere, point the lake's Iceberg
// tables at the configured warehouse (storage/catalog.Relocate). The
// service must be stopped meanwhile.
func cmdLakeRelocate(a *app, fs *flag.FlagSet) action {
	return noArgs(func(ctx context.Context) error {
		db, bucket, err := a.openStores(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		cfg, err := a.catalogConfig(db, bucket)
		if err != nil {
			return err
		}
		done, err := catalog.Relocate(ctx, cfg, a.now())
		if err != nil {
			return err
		}
		if len(done) == 0 {
			_, err := fmt.Fprintf(a.stdout, "every table is in the warehouse %s; nothing to relocate\n", cfg.Warehouse)
			return err
		}
		for _, r := range done {
			if _, err := fmt.Fprintf(a.stdout, "%s: %s -> %s (%d manifest files rewritten)\n", r.Table, r.From, r.To, r.Written); err != nil {
				return err
			}
			for _, f := range r.Leftover {
				a.note("lake relocate: an old metadata file could not be removed; nothing references it", "table", r.Table, "file", f)
			}
		}
		return nil
	})
}

// cmdLakeSweep is `schedbridge lake sweep [--older-than DURATION]`: the
// lake's sweep (storage/lake.Sweep), which the scheduler's leader runs each
// night, run now, with what it removed by kind on stdout.
func cmdLakeSweep(a *app, fs *flag.FlagSet) action {
	olderThan := fs.Duration("older-than", 0, "remove only what is older than `DURATION`, such as 24h or 30m (default: pipeline.lake_retention, 168h unless configured)")
	return noArgs(func(ctx context.Context) error {
		age := a.cfg.Pipeline.LakeRetention
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "older-than" {
				age = *olderThan
			}
		})
		if age < 0 {
			return usagef("--older-than %s: want a duration of at least 0", age)
		}
		if age < time.Hour {
			a.warn(fmt.Sprintf("--older-than %s is under an hour: the parts, uploads and metadata files of runs "+
				"still being written may be removed; stop the service first", age))
		}
		lk, _, closeLake, err := a.openLake(ctx)
		if err != nil {
			return err
		}
		defer closeLake()
		s, err := lk.Sweep(ctx, age)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "snapshots expired: %d\ntemporary uploads: %d\ntemporary parts: %d\n"+
			"unpublished run files: %d\nexpired run files: %d\nmetadata files: %d\nempty folders: %d\n"+
			"files removed: %d (older than %s)\n",
			s.Snapshots, s.Uploads, s.Parts, s.Unpublished, s.Expired, s.Metadata, s.Folders, s.Files(), age)
		return err
	})
}
