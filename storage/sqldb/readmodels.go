package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The materialized read models serve what the last complete run of a stage
// produced for a delivery day. read_models points each (dataset, day) at one
// run; publishing inserts the run's rows, moves the pointer and deletes the
// rows of earlier runs in one transaction, and every read is one statement
// that joins the pointer to its rows, so a reader sees one run's rows, never
// a mix, and never a pointer to deleted rows.

// Read model datasets.
const (
	readModelPositions    = "positions"
	readModelOpenPosition = "open-position"
	readModelKalkulation  = "kalkulation"
)

type readModel struct {
	dataset string
	table   string
	cols    []string // after run_id, delivery_day, portfolio_id, control_area, qh, ts
}

var (
	positionsModel = readModel{readModelPositions, "position_rows",
		[]string{"consumption_mw", "production_mw", "net_mw", "source"}}
	openPositionModel = readModel{readModelOpenPosition, "open_position_rows",
		[]string{"net_mw", "bought_mw", "sold_mw", "open_mw"}}
	// kalkulationModel is the kalkulation stage's materialized quantities,
	// which the period calculation reads over a range of days
	// (KalkulationRows in kalkulation.go).
	kalkulationModel = readModel{readModelKalkulation, "kalkulation_rows",
		[]string{"bought_mw", "sold_mw", "ist_mw", "basis"}}
)

// readModelKey identifies one row of a read model within a run.
type readModelKey struct {
	portfolio string
	area      pipeline.ControlArea
	qh        int
}

// PublishPositions makes rows, the positions the aggregate run runID
// computed for day, what Positions serves.
func (db *DB) PublishPositions(ctx context.Context, runID int64, day pipeline.Day, rows []pipeline.PositionRow) error {
	return db.publish(ctx, positionsModel, runID, day, len(rows), func(i int) (readModelKey, time.Time, []any) {
		r := rows[i]
		return readModelKey{r.Portfolio, r.ControlArea, r.QH}, r.TS,
			[]any{r.ConsumptionMW, r.ProductionMW, r.NetMW, r.Source}
	})
}

// PublishOpenPosition makes rows, the open position the run runID computed
// for day, what OpenPosition serves.
func (db *DB) PublishOpenPosition(ctx context.Context, runID int64, day pipeline.Day, rows []pipeline.OpenPositionRow) error {
	return db.publish(ctx, openPositionModel, runID, day, len(rows), func(i int) (readModelKey, time.Time, []any) {
		r := rows[i]
		return readModelKey{r.Portfolio, r.ControlArea, r.QH}, r.TS, []any{r.NetMW, r.BoughtMW, r.SoldMW, r.OpenMW}
	})
}

// publish writes n rows of a read model for runID in one transaction. A run
// of another day, a row outside the day's quarter-hours or a repeated row is
// Invalid; a run older than the one published already is a Conflict, so a
// slow run that finishes late cannot replace a newer run's result.
// Publishing the same run again replaces its rows.
func (db *DB) publish(ctx context.Context, m readModel, runID int64, day pipeline.Day, n int,
	row func(int) (readModelKey, time.Time, []any)) error {
	intervals := day.Intervals()
	seen := make(map[readModelKey]bool, n)
	for i := range n {
		k, _, _ := row(i)
		switch {
		case k.portfolio == "" || k.area == "":
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d has no portfolio or control area", m.dataset, day, i)
		case k.qh < 0 || k.qh >= intervals:
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d: quarter-hour %d outside 0..%d", m.dataset, day, i, k.qh, intervals-1)
		case seen[k]:
			return pipeline.Errorf(pipeline.Invalid, "publish %s %s: row %d repeats %s %s quarter-hour %d",
				m.dataset, day, i, k.portfolio, k.area, k.qh)
		}
		seen[k] = true
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if db.dialect == Postgres {
			// Two publishers of one dataset and day queue here; without it the
			// second's DELETE would not see the first's uncommitted rows.
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
				"read-model/"+m.dataset+"/"+day.String()); err != nil {
				return err
			}
		}
		var runDay string
		err := tx.NewSelect().Table("runs").Column("delivery_day").Where("id = ?", runID).Scan(ctx, &runDay)
		if errors.Is(err, sql.ErrNoRows) {
			return pipeline.Errorf(pipeline.NotFound, "run %d not found", runID)
		}
		if err != nil {
			return err
		}
		if runDay != day.String() {
			return pipeline.Errorf(pipeline.Invalid, "run %d is for %s, not %s", runID, runDay, day)
		}
		var current int64
		err = tx.NewSelect().Table("read_models").Column("run_id").
			Where("dataset = ?", m.dataset).Where("delivery_day = ?", day.String()).Scan(ctx, &current)
		switch {
		case err == nil && current > runID:
			return pipeline.Errorf(pipeline.Conflict, "run %d is older than run %d, whose %s are published for %s",
				runID, current, m.dataset, day)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE delivery_day = ?", m.table), day.String()); err != nil {
			return err
		}
		if err := db.insertReadModelRows(ctx, tx, m, runID, day, n, row); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO read_models (dataset, delivery_day, run_id) VALUES (?, ?, ?) "+
			"ON CONFLICT (dataset, delivery_day) DO UPDATE SET run_id = excluded.run_id", m.dataset, day.String(), runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("publish %s of run %d for %s: %w", m.dataset, runID, day, err)
	}
	return nil
}

func (db *DB) insertReadModelRows(ctx context.Context, tx bun.Tx, m readModel, runID int64, day pipeline.Day, n int,
	row func(int) (readModelKey, time.Time, []any)) error {
	cols := append([]string{"run_id", "delivery_day", "portfolio_id", "control_area", "qh", "ts"}, m.cols...)
	chunk := db.insertChunk()
	rowPH := "(" + placeholders(len(cols)) + ")"
	stmts := stmtCache{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	dayText := day.String()
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		var q strings.Builder
		fmt.Fprintf(&q, "INSERT INTO %s (%s) VALUES ", m.table, strings.Join(cols, ", "))
		args := make([]any, 0, (end-start)*len(cols))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString(rowPH)
			k, ts, vals := row(i)
			args = append(args, runID, dayText, k.portfolio, string(k.area), k.qh, db.timeArg(ts))
			args = append(args, vals...)
		}
		if err := stmts.exec(ctx, db, tx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %s: %w", m.table, err)
		}
	}
	return nil
}

// readModelRow is one row of either read model as the joined read returns
// it, with the value columns named a to d (and source for positions); the
// row columns are NULL when the published run has no row for the portfolio.
type readModelRow struct {
	RunID       int64      `bun:"run_id"`
	PortfolioID *string    `bun:"portfolio_id"`
	ControlArea *string    `bun:"control_area"`
	QH          *int       `bun:"qh"`
	TS          *time.Time `bun:"ts"`
	A           *float64   `bun:"a"`
	B           *float64   `bun:"b"`
	C           *float64   `bun:"c"`
	D           *float64   `bun:"d"`
	Source      *string    `bun:"source"`
}

// readRows reads the published rows of a read model for a day, of one
// portfolio or of all ("").
func (db *DB) readRows(ctx context.Context, m readModel, portfolio string, day pipeline.Day, cols string) (int64, []readModelRow, error) {
	filter := ""
	args := []any{}
	if portfolio != "" {
		filter = " AND r.portfolio_id = ?"
		args = append(args, portfolio)
	}
	args = append(args, m.dataset, day.String())
	var rows []readModelRow
	q := fmt.Sprintf("SELECT m.run_id, r.portfolio_id, r.control_area, r.qh, r.ts, %s FROM read_models m "+
		"LEFT JOIN %s r ON r.run_id = m.run_id AND r.delivery_day = m.delivery_day%s "+
		"WHERE m.dataset = ? AND m.delivery_day = ? ORDER BY r.portfolio_id, r.control_area, r.qh", cols, m.table, filter)
	if err := db.bun.NewRaw(q, args...).Scan(ctx, &rows); err != nil {
		return 0, nil, fmt.Errorf("read %s of %s: %w", m.dataset, day, err)
	}
	if len(rows) == 0 {
		return 0, nil, pipeline.Errorf(pipeline.NotFound, "no %s published for %s", m.dataset, day)
	}
	if rows[0].PortfolioID == nil {
		// The run published nothing for this portfolio.
		return rows[0].RunID, rows[:0], nil
	}
	return rows[0].RunID, rows, nil
}

// Positions returns the published positions of a delivery day and the run
// that computed them, of one portfolio or of all (""), ordered by portfolio,
// control area and quarter-hour. NotFound means no run has published
// positions for the day.
func (db *DB) Positions(ctx context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.PositionRow, error) {
	runID, rows, err := db.readRows(ctx, positionsModel, portfolio, day,
		"r.consumption_mw AS a, r.production_mw AS b, r.net_mw AS c, r.source")
	if err != nil {
		return 0, nil, err
	}
	out := make([]pipeline.PositionRow, len(rows))
	for i, r := range rows {
		out[i] = pipeline.PositionRow{Portfolio: *r.PortfolioID, ControlArea: pipeline.ControlArea(*r.ControlArea), QH: *r.QH,
			TS: r.TS.UTC(), ConsumptionMW: *r.A, ProductionMW: *r.B, NetMW: *r.C, Source: *r.Source}
	}
	return runID, out, nil
}

// OpenPosition returns the published open position of a delivery day and the
// run that computed it, like Positions.
func (db *DB) OpenPosition(ctx context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.OpenPositionRow, error) {
	runID, rows, err := db.readRows(ctx, openPositionModel, portfolio, day,
		"r.net_mw AS a, r.bought_mw AS b, r.sold_mw AS c, r.open_mw AS d")
	if err != nil {
		return 0, nil, err
	}
	out := make([]pipeline.OpenPositionRow, len(rows))
	for i, r := range rows {
		out[i] = pipeline.OpenPositionRow{Portfolio: *r.PortfolioID, ControlArea: pipeline.ControlArea(*r.ControlArea), QH: *r.QH,
			TS: r.TS.UTC(), NetMW: *r.A, BoughtMW: *r.B, SoldMW: *r.C, OpenMW: *r.D}
	}
	return runID, out, nil
}
