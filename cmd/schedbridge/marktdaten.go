package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
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

const marktdatenUsage = `usage:
  schedbridge prices import spot|rebap FILE      import SMARD chart JSON (spot) or a netztransparenz reBAP CSV
  schedbridge zeitreihen aktivierungen FILE      replace the imported series activations (JSON body or .csv)
  schedbridge zeitreihen sync                    import the files dropped under inbox/prices/ and inbox/zeitreihen/
  schedbridge kalkulation [--von YYYY-MM-DD] [--bis YYYY-MM-DD] [--portfolio ID]
                                                 the period calculation (default: this month up to yesterday)`

// marktdatenCmd runs the prices, zeitreihen and kalkulation commands.
func (a *app) marktdatenCmd(ctx context.Context, cmd string, args []string) error {
	if cmd == "kalkulation" {
		return a.kalkulationCmd(ctx, args)
	}
	// The arguments are checked and the file read before anything is opened.
	var run func(md *jobs.Marktdaten, bucket objstore.Bucket) (any, error)
	switch {
	case cmd == "prices" && len(args) == 3 && args[0] == "import":
		kind, err := price.ParseKind(args[1])
		if err != nil {
			return err
		}
		data, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		run = func(md *jobs.Marktdaten, _ objstore.Bucket) (any, error) {
			res, err := md.ImportPrices(ctx, kind, data, "cli:"+filepath.Base(args[2]))
			if err == nil {
				fmt.Fprintf(a.stderr, "prices %s: %d points, %d quarter-hours written, %d missing\n", kind, res.Points, res.Stored, res.MissingCount)
			}
			return res, err
		}
	case cmd == "zeitreihen" && len(args) == 2 && args[0] == "aktivierungen":
		data, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		var recs []zeitreihen.Activation
		if strings.EqualFold(filepath.Ext(args[1]), ".csv") {
			recs, err = ingest.DecodeActivationsCSV(data)
		} else {
			recs, err = ingest.DecodeActivations(data)
		}
		if err != nil {
			return err
		}
		run = func(md *jobs.Marktdaten, _ objstore.Bucket) (any, error) {
			return md.ImportActivations(ctx, recs, "cli:"+filepath.Base(args[1]))
		}
	case cmd == "zeitreihen" && len(args) == 1 && args[0] == "sync":
		run = func(md *jobs.Marktdaten, bucket objstore.Bucket) (any, error) {
			start := time.Now()
			rep, err := md.SyncDrops(ctx, bucket)
			if err == nil {
				fmt.Fprintf(a.stderr, "zeitreihen sync: %d price files, %d activation files in %s\n",
					len(rep.Prices), len(rep.Zeitreihen), time.Since(start).Round(time.Millisecond))
			}
			return rep, err
		}
	default:
		return usagef("%s", marktdatenUsage)
	}
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := run(a.newMarktdaten(db), bucket)
	if err != nil {
		return err
	}
	return a.printJSON(res)
}

// kalkulationCmd prints the calculation of a period.
func (a *app) kalkulationCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("kalkulation", a.stderr)
	vonFlag := fs.String("von", "", "first day YYYY-MM-DD (default: the first of the month of --bis)")
	bisFlag := fs.String("bis", "", "last day YYYY-MM-DD (default: yesterday in Europe/Berlin)")
	portfolio := fs.String("portfolio", "", "one portfolio (default: all)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("%s", marktdatenUsage)
	}
	von, bis := kalkulation.DefaultPeriod(pipeline.DayOf(a.now()))
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
	r, _, err := a.newRunner(db, bucket, nil, nil)
	if err != nil {
		return err
	}
	res, err := r.Kalkulation(ctx, *portfolio, von, bis)
	if err != nil {
		return err
	}
	return a.printJSON(res)
}

// printJSON writes v indented to stdout.
func (a *app) printJSON(v any) error {
	out := json.NewEncoder(a.stdout)
	out.SetIndent("", "  ")
	return out.Encode(v)
}
