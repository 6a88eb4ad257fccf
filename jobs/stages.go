package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
	"github.com/schedbridge/schedbridge/pipeline/position"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// locationBatch is how many market locations are read from the database at
// a time: large enough to amortise the query, small enough to stay in cache.
const locationBatch = 5000

// ForecastOutputs is what the forecast stage reports in its run record.
type ForecastOutputs struct {
	Dataset    lake.Snapshot             `json:"forecast_malo"`
	Portfolios map[string]forecast.Stats `json:"portfolios"`
	Seconds    float64                   `json:"seconds"`
	// CommitSeconds is the part of Seconds spent closing the Parquet files,
	// moving them to their final keys and recording them as the run's
	// parts; the run's commit follows.
	CommitSeconds float64 `json:"commit_seconds"`
	Values        int64   `json:"values"`
}

func (r *Runner) forecastStage(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error) {
	started := time.Now()
	day := run.Day
	w, err := r.lake.Create(ctx, pipeline.DatasetForecastMalo, day, run.ID, pipeline.ForecastMaloSchema)
	if err != nil {
		return stageResult{}, err
	}
	defer w.Abort()
	var total int64
	for _, p := range ps {
		n, err := r.store.CountVersions(ctx, "location", p.ID, true)
		if err != nil {
			return stageResult{}, err
		}
		total += int64(n)
	}
	out := ForecastOutputs{Portfolios: map[string]forecast.Stats{}}
	var done int64
	for _, p := range ps {
		st, err := r.forecastPortfolio(ctx, p, day, w, func(n int) {
			done += int64(n)
			r.progress(pipeline.StageForecast, done, total)
		})
		if err != nil {
			return stageResult{}, fmt.Errorf("portfolio %s: %w", p.ID, err)
		}
		out.Portfolios[p.ID] = st
	}
	committing := time.Now()
	snap, err := r.stageParts(ctx, run, w)
	if err != nil {
		return stageResult{}, err
	}
	out.CommitSeconds = time.Since(committing).Seconds()
	out.Dataset = snap
	out.Values = snap.Rows
	out.Seconds = time.Since(started).Seconds()
	return stageResult{outputs: out}, nil
}

// forecastPortfolio generates the forecasts of one portfolio's market
// locations into w. The locations and their metered history are both read in
// malo order and merged, so memory holds one location's history at a time
// whatever the size of the portfolio.
func (r *Runner) forecastPortfolio(ctx context.Context, p pipeline.Portfolio, day pipeline.Day, w *lake.Writer, tick func(int)) (forecast.Stats, error) {
	profiles, err := r.store.ProfilesForDay(ctx, p.ID, day)
	if err != nil {
		return forecast.Stats{}, err
	}
	gen, err := forecast.NewGenerator(r.cfg.Forecast, p.ID, day, profiles, w.Write)
	if err != nil {
		return forecast.Stats{}, err
	}
	defer gen.Release()
	sub, ok, err := r.submitted(ctx, p.ID, day)
	if err != nil {
		return forecast.Stats{}, err
	}
	if ok {
		for _, s := range sub.Series {
			if s.Malo == "" {
				continue
			}
			if err := gen.AddSubmitted(s.Malo, sub.MaloMapping[s.Malo], s.Kind, s.Unit, s.Values); err != nil {
				return forecast.Stats{}, err
			}
		}
	}

	// The history days depend on the holidays of each location's state.
	weeks := r.cfg.Forecast.HistoryWeeks
	if weeks <= 0 {
		weeks = 8
	}
	daysOf := map[calendar.State]map[pipeline.Day]bool{}
	similar := func(st calendar.State) map[pipeline.Day]bool {
		if d, ok := daysOf[st]; ok {
			return d
		}
		set := map[pipeline.Day]bool{}
		for _, d := range forecast.SimilarDays(day, st, weeks) {
			set[d] = true
		}
		daysOf[st] = set
		return set
	}
	var union []pipeline.Day
	seen := map[pipeline.Day]bool{}
	for _, st := range r.statesInUse() {
		for d := range similar(st) {
			if !seen[d] {
				seen[d] = true
				union = append(union, d)
			}
		}
	}
	slices.SortFunc(union, func(a, b pipeline.Day) int { return a.Compare(b) })

	hist := startHistory(ctx, r.store, p.ID, union)
	defer hist.stop()
	err = r.store.CurrentLocations(ctx, p.ID, locationBatch, func(locs []pipeline.Location) error {
		for _, loc := range locs {
			s, ok := forecast.ActiveSlice(loc, day)
			if !ok {
				continue
			}
			var h []pipeline.MeteredEntry
			if s.MeteringType == pipeline.RLM || s.MeteringType == pipeline.IMSys {
				entries, err := hist.take(loc.Malo)
				if err != nil {
					return err
				}
				want := similar(r.cfg.Forecast.StateOf(s.MGA))
				for _, e := range entries {
					if want[e.Day] {
						h = append(h, e)
					}
				}
			}
			if err := gen.Add(loc.Malo, s, h); err != nil {
				return fmt.Errorf("malo %s: %w", loc.Malo, err)
			}
		}
		tick(len(locs))
		return nil
	})
	if err != nil {
		return forecast.Stats{}, err
	}
	if err := hist.err(); err != nil {
		return forecast.Stats{}, err
	}
	if err := gen.Flush(); err != nil {
		return forecast.Stats{}, err
	}
	return gen.Stats(), nil
}

// statesInUse lists the holiday states that locations can map to: the
// configured ones and the national default.
func (r *Runner) statesInUse() []calendar.State {
	out := []calendar.State{""}
	seen := map[calendar.State]bool{"": true}
	for _, st := range r.cfg.States {
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	return out
}

// submitted returns the portfolio's current submitted forecast for the day.
func (r *Runner) submitted(ctx context.Context, portfolio string, day pipeline.Day) (pipeline.Forecast, bool, error) {
	sf, err := r.store.Forecast(ctx, portfolio, day, 0)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return pipeline.Forecast{}, false, nil
	} else if err != nil {
		return pipeline.Forecast{}, false, err
	}
	var f pipeline.Forecast
	if err := json.Unmarshal(sf.Body, &f); err != nil {
		return f, false, fmt.Errorf("decode stored forecast %s %s v%d: %w", portfolio, day, sf.Version.Version, err)
	}
	return f, true, nil
}

// AggregateOutputs is what the aggregate stage reports.
type AggregateOutputs struct {
	Input        lake.Snapshot `json:"input"`
	Dataset      lake.Snapshot `json:"position_control_area"`
	Rows         int64         `json:"rows"`
	ReadSeconds  float64       `json:"read_seconds"`
	Seconds      float64       `json:"seconds"`
	ValuesPerSec float64       `json:"values_per_second"`
	// SubmittedPortfolios counts the portfolios whose submitted forecast
	// replaced generated ones in the areas it covers.
	SubmittedPortfolios int `json:"submitted_portfolios"`
}

func (r *Runner) aggregateStage(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error) {
	started := time.Now()
	day := run.Day
	in, err := r.latest(ctx, pipeline.DatasetForecastMalo, day, pipeline.StageForecast)
	if err != nil {
		return stageResult{}, err
	}
	agg := position.NewAggregator(day)
	var rows int64
	// The stage reads the published files, also when the forecast stage
	// ran in this process, so that a retry of the stage alone reads what
	// the chain read. Scan decodes the row groups on both cores and hands
	// them over in file order, so the sums do not depend on the timing.
	cols := lake.ScanColumns{Strings: []string{"portfolio", "control_area", "kind", "source"},
		Int32s: []string{"qh_index"}, Float64s: []string{"power_mw"}}
	err = r.lake.Scan(ctx, in, cols, func(b *lake.Block) error {
		rows += int64(b.Rows)
		r.progress(pipeline.StageAggregate, rows, in.Rows)
		return agg.AddBlock(position.Block{Rows: b.Rows,
			Portfolio: position.Runs(b.Strings[0]), ControlArea: position.Runs(b.Strings[1]),
			Kind: position.Runs(b.Strings[2]), Source: position.Runs(b.Strings[3]),
			QH: b.Int32s[0], PowerMW: b.Float64s[0]})
	})
	if err != nil {
		return stageResult{}, err
	}
	read := time.Since(started)
	var subs []position.Submitted
	for _, p := range ps {
		f, ok, err := r.submitted(ctx, p.ID, day)
		if err != nil {
			return stageResult{}, err
		}
		if ok {
			subs = append(subs, position.Submitted{Portfolio: p.ID, Forecast: f})
		}
	}
	rec, err := agg.Positions(r.cfg.Alloc, subs)
	if err != nil {
		return stageResult{}, err
	}
	defer rec.Release()
	snap, err := r.writeAll(ctx, pipeline.DatasetPositionControlArea, run, pipeline.PositionSchema, rec)
	if err != nil {
		return stageResult{}, err
	}
	model := position.PositionRows(rec)
	secs := time.Since(started).Seconds()
	return stageResult{
		outputs: AggregateOutputs{Input: in, Dataset: snap, Rows: rows, ReadSeconds: read.Seconds(), Seconds: secs,
			ValuesPerSec: float64(rows) / max(secs, 1e-9), SubmittedPortfolios: len(subs)},
		apply: func(ctx context.Context) error { return r.store.PublishPositions(ctx, run.ID, day, model) },
	}, nil
}

// OpenPositionOutputs is what the open-position stage reports.
type OpenPositionOutputs struct {
	Input   lake.Snapshot  `json:"input"`
	Dataset lake.Snapshot  `json:"open_position"`
	Trades  map[string]int `json:"trade_set_versions"`
}

func (r *Runner) openPositionStage(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error) {
	day := run.Day
	in, err := r.latest(ctx, pipeline.DatasetPositionControlArea, day, pipeline.StageAggregate)
	if err != nil {
		return stageResult{}, err
	}
	pos, err := r.readAll(ctx, in, pipeline.PositionSchema)
	if err != nil {
		return stageResult{}, err
	}
	defer pos.Release()
	out := OpenPositionOutputs{Input: in, Trades: map[string]int{}}
	var sets []pipeline.TradeSet
	for _, p := range ps {
		set, version, err := r.store.Trades(ctx, p.ID, day)
		if pipeline.KindOf(err) == pipeline.NotFound {
			continue
		} else if err != nil {
			return stageResult{}, err
		}
		set.Portfolio = p.ID
		sets = append(sets, set)
		out.Trades[p.ID] = version
	}
	open, err := position.Open(r.cfg.Alloc, pos, sets)
	if err != nil {
		return stageResult{}, err
	}
	defer open.Release()
	if out.Dataset, err = r.writeAll(ctx, pipeline.DatasetOpenPosition, run, pipeline.OpenPositionSchema, open); err != nil {
		return stageResult{}, err
	}
	model := position.OpenRows(open)
	return stageResult{outputs: out,
		apply: func(ctx context.Context) error { return r.store.PublishOpenPosition(ctx, run.ID, day, model) }}, nil
}

// writeAll writes a small dataset of the run in one go and stages it for
// the run's commit.
func (r *Runner) writeAll(ctx context.Context, dataset string, run pipeline.Run, schema *arrow.Schema, recs ...arrow.RecordBatch) (lake.Snapshot, error) {
	w, err := r.lake.Create(ctx, dataset, run.Day, run.ID, schema)
	if err != nil {
		return lake.Snapshot{}, err
	}
	defer w.Abort()
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			return lake.Snapshot{}, err
		}
	}
	return r.stageParts(ctx, run, w)
}

// stageParts finishes the writer's files, moves them to their final keys and
// records them as the run's parts, which the run's commit publishes. It
// returns the snapshot they become once committed.
func (r *Runner) stageParts(ctx context.Context, run pipeline.Run, w *lake.Writer) (lake.Snapshot, error) {
	pub, err := w.Stage(ctx)
	if err != nil {
		return lake.Snapshot{}, err
	}
	parts := make([]pipeline.RunPart, len(pub.Files))
	for i, f := range pub.Files {
		parts[i] = pipeline.RunPart{Dataset: pub.Dataset, Key: f.Key, Rows: f.Rows, Bytes: f.Bytes, Footer: f.Footer}
	}
	if err := r.store.RecordRunParts(ctx, run.ID, "", parts, r.cfg.Now()); err != nil {
		return lake.Snapshot{}, err
	}
	return pub.Snapshot(), nil
}

// readAll reads a small snapshot into one record batch owned by the caller.
func (r *Runner) readAll(ctx context.Context, s lake.Snapshot, schema *arrow.Schema) (arrow.RecordBatch, error) {
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	err := r.lake.Read(ctx, s, nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		parts = append(parts, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return concatBatches(r.cfg.Alloc, schema, parts)
}

// concatBatches joins record batches of one schema column by column.
func concatBatches(mem memory.Allocator, schema *arrow.Schema, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var n int64
	for _, p := range parts {
		n += p.NumRows()
	}
	for i := range cols {
		if len(parts) == 0 {
			b := array.NewBuilder(mem, schema.Field(i).Type)
			cols[i] = b.NewArray()
			b.Release()
			continue
		}
		arrs := make([]arrow.Array, len(parts))
		for j, p := range parts {
			arrs[j] = p.Column(i)
		}
		c, err := array.Concatenate(arrs, mem)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("concatenate column %s: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}
