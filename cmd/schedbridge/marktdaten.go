package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest/marketdata"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// newMarktdaten wires the ramp-up, the Zeitreihen tree and the prices. Our
// own balancing group (mako.self.balancing_group) is the contract the tree
// expects where no portfolio names one.
func (a *app) newMarktdaten(db *sqldb.DB) *jobs.Marktdaten {
	cfg := jobs.MarktdatenConfig{Now: a.now, Logger: a.log.With("component", "marktdaten")}
	if bg := a.cfg.Mako.Self.BalancingGroup; bg != "" {
		cfg.DefaultContracts = []string{bg}
	}
	return jobs.NewMarktdaten(db, cfg)
}

// withMarktdaten runs fn on the market data over the configured stores and
// prints its result as JSON.
func (a *app) withMarktdaten(ctx context.Context, fn func(md *jobs.Marktdaten, bucket objstore.Bucket) (any, error)) error {
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := fn(a.newMarktdaten(db), bucket)
	if err != nil {
		return err
	}
	return a.printJSON(res)
}

// The arguments are checked and the file read before anything is opened.

func cmdPricesImport(a *app, fs *flag.FlagSet) action {
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 2 {
			return usagef("want spot or rebap, and FILE")
		}
		kind, err := price.ParseKind(pos[0])
		if err != nil {
			return err
		}
		data, err := readInput(pos[1])
		if err != nil {
			return err
		}
		return a.withMarktdaten(ctx, func(md *jobs.Marktdaten, _ objstore.Bucket) (any, error) {
			res, err := md.ImportPrices(ctx, kind, data, "cli:"+filepath.Base(pos[1]))
			if err == nil {
				a.note(fmt.Sprintf("prices %s: %d points, %d quarter-hours written, %d missing", kind, res.Points, res.Stored, res.MissingCount),
					"kind", string(kind), "points", res.Points, "stored", res.Stored, "missing", res.MissingCount)
			}
			return res, err
		})
	}
}

func cmdZeitreihenAktivierungen(a *app, fs *flag.FlagSet) action {
	return oneArg("FILE", func(ctx context.Context, path string) error {
		data, err := readInput(path)
		if err != nil {
			return err
		}
		var recs []zeitreihen.Activation
		if strings.EqualFold(filepath.Ext(path), ".csv") {
			recs, err = marketdata.DecodeActivationsCSV(data)
		} else {
			recs, err = marketdata.DecodeActivations(data)
		}
		if err != nil {
			return err
		}
		return a.withMarktdaten(ctx, func(md *jobs.Marktdaten, _ objstore.Bucket) (any, error) {
			return md.ImportActivations(ctx, recs, "cli:"+filepath.Base(path))
		})
	})
}

func cmdZeitreihenSync(a *app, fs *flag.FlagSet) action {
	return noArgs(func(ctx context.Context) error {
		return a.withMarktdaten(ctx, func(md *jobs.Marktdaten, bucket objstore.Bucket) (any, error) {
			start := time.Now()
			rep, err := md.SyncDrops(ctx, bucket)
			if err == nil {
				took := time.Since(start)
				a.note(fmt.Sprintf("zeitreihen sync: %d price files, %d activation files in %s",
					len(rep.Prices), len(rep.Zeitreihen), took.Round(time.Millisecond)),
					"price_files", len(rep.Prices), "activation_files", len(rep.Zeitreihen), "duration_s", roundSeconds(took.Seconds()))
			}
			return rep, err
		})
	})
}

// cmdKalkulation prints the calculation of a period.
func cmdKalkulation(a *app, fs *flag.FlagSet) action {
	vonFlag := fs.String("von", "", "first day YYYY-MM-DD (default: the first of the month of --bis)")
	bisFlag := fs.String("bis", "", "last day YYYY-MM-DD (default: yesterday in Europe/Berlin)")
	portfolio := fs.String("portfolio", "", "one portfolio (default: all)")
	return noArgs(func(ctx context.Context) error {
		von, bis := kalkulation.DefaultPeriod(pipeline.DayOf(a.now()))
		var err error
		if *bisFlag != "" {
			if bis, err = pipeline.ParseDay(*bisFlag); err != nil {
				return err
			}
			von = pipeline.NewDay(bis.Year, bis.Month, 1)
		}
		if *vonFlag != "" {
			if von, err = pipeline.ParseDay(*vonFlag); err != nil {
				return err
			}
		}
		db, bucket, err := a.openStores(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		if *portfolio != "" {
			// Without the check, an unknown portfolio gave a period of zeros.
			if err := knownPortfolio(ctx, db, *portfolio); err != nil {
				return err
			}
		}
		r, _, err := a.newRunner(ctx, db, bucket, nil, nil)
		if err != nil {
			return err
		}
		res, err := r.Kalkulation(ctx, *portfolio, von, bis)
		if err != nil {
			return err
		}
		return a.printJSON(res)
	})
}

// printJSON writes v indented to stdout.
func (a *app) printJSON(v any) error {
	out := json.NewEncoder(a.stdout)
	out.SetIndent("", "  ")
	return out.Encode(v)
}
