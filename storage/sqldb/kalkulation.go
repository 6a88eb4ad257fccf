package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
)

// PublishKalkulation makes rows, the quantities the kalkulation run runID
// materialized for day, what KalkulationRows serves for the day, like the
// other read models (see publish): a later run replaces an earlier one as a
// whole, an older run than the published one is a Conflict. A row of
// another day, whose TS is not the UTC start of its quarter-hour, or whose
// basis is neither ist nor fahrplan, is Invalid.
func (db *DB) PublishKalkulation(ctx context.Context, runID int64, day pipeline.Day, rows []kalkulation.Row) error {
	start := day.Start()
	for i, r := range rows {
		switch {
		case !r.TS.Equal(start.Add(time.Duration(r.QH) * 15 * time.Minute)):
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d: %s is not the start of quarter-hour %d",
				readModelKalkulation, day, i, r.TS.UTC().Format(time.RFC3339), r.QH)
		case !r.Day.IsZero() && r.Day != day:
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d is of %s", readModelKalkulation, day, i, r.Day)
		case r.Basis != kalkulation.BasisIst && r.Basis != kalkulation.BasisFahrplan:
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d has basis %q (want ist or fahrplan)",
				readModelKalkulation, day, i, r.Basis)
		}
	}
	return db.publish(ctx, kalkulationModel, runID, day, len(rows), func(i int) (readModelKey, time.Time, []any) {
		r := rows[i]
		return readModelKey{r.Portfolio, r.ControlArea, r.QH}, r.TS, []any{r.BoughtMW, r.SoldMW, r.IstMW, string(r.Basis)}
	})
}

// KalkulationRows returns the published kalkulation rows of every day from
// from to to (both included), each day as the run its read-model pointer
// names published it, of one portfolio or of all (""), ordered by day,
// portfolio, control area and quarter-hour, with Day and TS (UTC) filled. A
// day nothing was published for has no rows; that is not an error. The
// range is one statement, so a period is read in one round trip.
//
// The rows are ordered in Go, where strings compare by bytes as SQLite's do
// (PostgreSQL would order by the database's collation), and TS is computed
// from the day and the quarter-hour, which PublishKalkulation checked,
// rather than parsed from a stored timestamp per row.
func (db *DB) KalkulationRows(ctx context.Context, portfolio string, from, to pipeline.Day) ([]kalkulation.Row, error) {
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return nil, pipeline.Errorf(pipeline.Invalid, "kalkulation rows: range %s..%s", from, to)
	}
	filter := ""
	args := []any{}
	if portfolio != "" {
		filter = " AND r.portfolio_id = ?"
		args = append(args, portfolio)
	}
	args = append(args, readModelKalkulation, from.String(), to.String())
	q := "SELECT r.delivery_day, r.portfolio_id, r.control_area, r.qh, r.bought_mw, r.sold_mw, r.ist_mw, r.basis " +
		"FROM read_models m JOIN kalkulation_rows r ON r.run_id = m.run_id AND r.delivery_day = m.delivery_day" + filter +
		" WHERE m.dataset = ? AND m.delivery_day >= ? AND m.delivery_day <= ?"
	rows, err := db.bun.DB.QueryContext(ctx, db.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("read kalkulation rows %s..%s: %w", from, to, err)
	}
	defer rows.Close()
	out := []kalkulation.Row{}
	// The few distinct days, portfolios, areas and bases are converted once.
	type dayInfo struct {
		day   pipeline.Day
		start time.Time
	}
	days := map[string]dayInfo{}
	texts := map[string]string{}
	intern := func(b sql.RawBytes) string {
		if s, ok := texts[string(b)]; ok {
			return s
		}
		s := string(b)
		texts[s] = s
		return s
	}
	var dayText, portfolioText, areaText, basisText sql.RawBytes
	for rows.Next() {
		var r kalkulation.Row
		if err := rows.Scan(&dayText, &portfolioText, &areaText, &r.QH, &r.BoughtMW, &r.SoldMW, &r.IstMW, &basisText); err != nil {
			return nil, fmt.Errorf("read kalkulation rows %s..%s: %w", from, to, err)
		}
		d, ok := days[string(dayText)]
		if !ok {
			day, err := pipeline.ParseDay(string(dayText))
			if err != nil {
				return nil, fmt.Errorf("read kalkulation rows: stored %w", err)
			}
			d = dayInfo{day, day.Start().UTC()}
			days[string(dayText)] = d
		}
		r.Day, r.TS = d.day, d.start.Add(time.Duration(r.QH)*15*time.Minute)
		r.Portfolio, r.ControlArea, r.Basis = intern(portfolioText), pipeline.ControlArea(intern(areaText)), kalkulation.Basis(intern(basisText))
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read kalkulation rows %s..%s: %w", from, to, err)
	}
	slices.SortFunc(out, func(a, b kalkulation.Row) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		if c := strings.Compare(a.Portfolio, b.Portfolio); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.ControlArea), string(b.ControlArea)); c != 0 {
			return c
		}
		return a.QH - b.QH
	})
	return out, nil
}
