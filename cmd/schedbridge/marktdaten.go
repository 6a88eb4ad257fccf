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
	out := json.NewEncoder(a.stdout)
	out.SetIndent("", "  ")
	switch cmd {
	case "prices":
		if len(args) != 3 || args[0] != "import" {
			return usagef("%s", marktdatenUsage)
		}
		kind, err := price.ParseKind(args[1])
		if err != nil {
			return err
		}
		data, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		db, err := a.openDB(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		res, err := a.newMarktdaten(db).ImportPrices(ctx, kind, data, "cli:"+filepath.Base(args[2]))
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "prices %s: %d points, %d quarter-hours written, %d missing\n", kind, res.Points, res.Stored, res.MissingCount)
		return out.Encode(res)
	case "zeitreihen":
		if len(args) == 0 {
			return usagef("%s", marktdatenUsage)
		}
		switch {
		case args[0] == "aktivierungen" && len(args) == 2:
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
			db, err := a.openDB(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			res, err := a.newMarktdaten(db).ImportActivations(ctx, recs, "cli:"+filepath.Base(args[1]))
			if err != nil {
				return err
			}
			return out.Encode(res)
		case args[0] == "sync" && len(args) == 1:
			db, bucket, err := a.openStores(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			rep, err := a.newMarktdaten(db).SyncDrops(ctx, bucket)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "zeitreihen sync: %d price files, %d activation files in %s\n",
				len(rep.Prices), len(rep.Zeitreihen), time.Since(start).Round(time.Millisecond))
			return out.Encode(rep)
		}
		return usagef("%s", marktdatenUsage)
	}
	// kalkulation
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
	return out.Encode(res)
}
