package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/pipeline/position"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// OutboxPrefix is where schedule messages are written for the TSO channel
// (an AS4 gateway or an operator picks them up there).
const OutboxPrefix = "outbox/fahrplan/"

// BusinessTypeTrade is the ESS business type of the schedule's time series:
// internal trade between two balancing groups in one control area.
const BusinessTypeTrade = "A02"

func defaultTSOParty() map[pipeline.ControlArea]string { return maps.Clone(fahrplan.DefaultTSOParty) }
func defaultAreaEIC() map[pipeline.ControlArea]string  { return maps.Clone(fahrplan.ControlAreaEIC) }

// SentSchedule is one schedule message in the stage's outputs.
type SentSchedule struct {
	Portfolio   string               `json:"portfolio"`
	ControlArea pipeline.ControlArea `json:"control_area"`
	FileName    string               `json:"file_name"`
	ObjectKey   string               `json:"object_key"`
	Version     int                  `json:"version"`
	New         bool                 `json:"new"` // false when the same content was sent before
	Series      int                  `json:"series"`
}

// SchedulesOutputs is what the schedules stage reports.
type SchedulesOutputs struct {
	Input    lake.Snapshot  `json:"input"`
	Dataset  lake.Snapshot  `json:"schedule"`
	Messages []SentSchedule `json:"messages"`
}

// areaKey groups open-position rows.
type areaKey struct {
	portfolio string
	area      pipeline.ControlArea
}

func (r *Runner) schedulesStage(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error) {
	day := run.Day
	// The versions that earlier runs committed and could not deliver go to
	// the TSO before a newer one.
	if _, err := r.DeliverSchedules(ctx); err != nil {
		return stageResult{}, err
	}
	in, err := r.latest(ctx, pipeline.DatasetOpenPosition, day, pipeline.StageOpenPosition)
	if err != nil {
		return stageResult{}, err
	}
	rec, err := r.readAll(ctx, in, pipeline.OpenPositionSchema)
	if err != nil {
		return stageResult{}, err
	}
	rows := position.OpenRows(rec)
	rec.Release()
	open := map[areaKey][]float64{}
	n := day.Intervals()
	for _, row := range rows {
		k := areaKey{row.Portfolio, row.ControlArea}
		if open[k] == nil {
			open[k] = make([]float64, n)
		}
		if row.QH < 0 || row.QH >= n {
			return stageResult{}, pipeline.Errorf(pipeline.Invalid, "open position %s %s: quarter-hour %d outside the day", row.Portfolio, row.ControlArea, row.QH)
		}
		open[k][row.QH] = row.OpenMW
	}

	// The schedule carries the trades and the open position left after
	// them; both must come from the same trade set, or a trade imported
	// after the open position was computed would count twice.
	used, err := r.tradeVersions(ctx, in.RunID)
	if err != nil {
		return stageResult{}, err
	}
	out := SchedulesOutputs{Input: in}
	var versions []pipeline.ScheduleMessage // the new versions, recorded in the commit
	b := newScheduleRows(r.cfg.Alloc, day)
	defer b.release()
	for _, p := range ps {
		var trades []pipeline.Trade
		set, version, err := r.store.Trades(ctx, p.ID, day)
		if err == nil {
			trades = set.Trades
		} else if pipeline.KindOf(err) != pipeline.NotFound {
			return stageResult{}, err
		}
		if version != used[p.ID] {
			return stageResult{}, pipeline.Errorf(pipeline.Invalid,
				"the trades of portfolio %s for %s changed since the open position was computed (version %d, the open position used %d): run the open-position stage again",
				p.ID, day, version, used[p.ID])
		}
		for _, area := range pipeline.ControlAreas {
			residual, hasOpen := open[areaKey{p.ID, area}]
			var areaTrades []pipeline.Trade
			for _, t := range trades {
				if t.ControlArea == area {
					areaTrades = append(areaTrades, t)
				}
			}
			if !hasOpen && len(areaTrades) == 0 {
				continue
			}
			msg, err := r.buildSchedule(p, day, area, areaTrades, residual)
			if err != nil {
				return stageResult{}, fmt.Errorf("portfolio %s %s: %w", p.ID, area, err)
			}
			sent, version, err := r.prepare(ctx, run, p, area, msg)
			if err != nil {
				return stageResult{}, fmt.Errorf("portfolio %s %s: %w", p.ID, area, err)
			}
			if version != nil {
				versions = append(versions, *version)
			}
			msg.Version = sent.Version
			b.add(p.ID, area, msg, sent.FileName)
			out.Messages = append(out.Messages, sent)
		}
	}
	sched := b.record()
	defer sched.Release()
	if out.Dataset, err = r.writeAll(ctx, pipeline.DatasetSchedule, run, pipeline.ScheduleSchema, sched); err != nil {
		return stageResult{}, err
	}
	return stageResult{outputs: out,
		apply: func(ctx context.Context) error { return r.recordVersions(ctx, versions) },
		after: func(ctx context.Context) {
			if _, err := r.DeliverSchedules(context.WithoutCancel(ctx)); err != nil {
				r.log.ErrorContext(ctx, "schedules committed but not all delivered to the outbox; the scheduler's leader delivers them", "err", err)
			}
		}}, nil
}

// tradeVersions is the trade set version per portfolio that the
// open-position run used (absent: no trades).
func (r *Runner) tradeVersions(ctx context.Context, runID int64) (map[string]int, error) {
	run, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("open-position run %d: %w", runID, err)
	}
	var o OpenPositionOutputs
	if err := json.Unmarshal(run.Outputs, &o); err != nil {
		return nil, fmt.Errorf("outputs of open-position run %d: %w", runID, err)
	}
	return o.Trades, nil
}

// buildSchedule turns a portfolio's trades and remaining open position in one
// control area into the time series of an ESS schedule message: each trade
// as a series between the portfolio's balancing group and the counterparty
// (InParty receives the energy), and what is still open as traded with the
// portfolio's exchange balancing group (bought where positive, sold where
// negative), so that the schedule covers the whole forecast. Version and
// creation time are left for submit.
func (r *Runner) buildSchedule(p pipeline.Portfolio, day pipeline.Day, area pipeline.ControlArea, trades []pipeline.Trade, residual []float64) (fahrplan.Message, error) {
	if p.BalancingGroup == "" {
		return fahrplan.Message{}, pipeline.Errorf(pipeline.Invalid,
			"portfolio %s has no balancing group: set it with `schedbridge portfolio put %s --balancing-group EIC`", p.ID, p.ID)
	}
	tso, domain := r.cfg.TSOParty[area], r.cfg.AreaEIC[area]
	if tso == "" || domain == "" {
		return fahrplan.Message{}, pipeline.Errorf(pipeline.Invalid, "no TSO party or control area EIC configured for %s", area)
	}
	n := day.Intervals()
	msg := fahrplan.Message{
		MessageID: messageID(p.ID, day, area),
		Sender:    p.BalancingGroup,
		Receiver:  tso,
		Day:       day,
		Domain:    domain,
	}
	add := func(in, out string, q []float64) {
		msg.Series = append(msg.Series, fahrplan.Series{
			ID: fmt.Sprintf("TS%03d", len(msg.Series)+1), BusinessType: BusinessTypeTrade,
			InArea: domain, OutArea: domain, InParty: in, OutParty: out, Quantities: q,
		})
	}
	for _, t := range trades {
		if len(t.Values) != n {
			return msg, pipeline.Errorf(pipeline.Invalid, "trade with %s has %d values, expected %d for %s", t.Counterparty, len(t.Values), n, day)
		}
		q := make([]float64, n)
		for i, v := range t.Values {
			q[i] = round3(t.Unit.ToMW(v))
		}
		if t.Direction == pipeline.Sell {
			add(t.Counterparty, p.BalancingGroup, q)
		} else {
			add(p.BalancingGroup, t.Counterparty, q)
		}
	}
	if residual != nil {
		buy, sell := make([]float64, n), make([]float64, n)
		var anyBuy, anySell bool
		for i, v := range residual {
			v = round3(v)
			switch {
			case v > 0:
				buy[i], anyBuy = v, true
			case v < 0:
				sell[i], anySell = -v, true
			}
		}
		if (anyBuy || anySell) && p.ExchangeBalancingGroup == "" {
			return msg, pipeline.Errorf(pipeline.Invalid,
				"portfolio %s has an open position in %s but no exchange balancing group: import trades or set `--exchange-balancing-group`", p.ID, area)
		}
		if anyBuy {
			add(p.BalancingGroup, p.ExchangeBalancingGroup, buy)
		}
		if anySell {
			add(p.ExchangeBalancingGroup, p.BalancingGroup, sell)
		}
	}
	return msg, nil
}

// round3 rounds to the 3 decimals that a schedule carries, so that the
// content hash does not see noise below what is sent. Negative zero
// becomes zero.
func round3(v float64) float64 {
	r := math.Round(v*1000) / 1000
	if r == 0 {
		return 0
	}
	return r
}

// messageID is the ESS MessageIdentification of a portfolio's schedule for a
// day and control area: the same for every version, unique per sender, and
// short enough for ESS's 35 characters.
func messageID(portfolio string, day pipeline.Day, area pipeline.ControlArea) string {
	sum := sha256.Sum256([]byte(portfolio))
	return fmt.Sprintf("SB%04d%02d%02d-%s-%s", day.Year, int(day.Month), day.Dom,
		strings.ToUpper(string(area[:min(len(area), 6)])), hex.EncodeToString(sum[:4]))
}

// contentHash identifies what a message says, without its version and
// creation time, so a re-run with the same data sends nothing new.
func contentHash(m fahrplan.Message) string {
	b, _ := json.Marshal(struct {
		ID, Sender, Receiver, Domain, Day string
		Series                            []fahrplan.Series
	}{m.MessageID, m.Sender, m.Receiver, m.Domain, m.Day.String(), m.Series})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// prepare numbers a schedule message and builds its document. When the
// latest recorded version says the same (its content hash), nothing new is
// sent and the version is nil; otherwise the message becomes the next
// version, to be recorded in the run's commit (recordVersions) and delivered
// after it (DeliverSchedules).
func (r *Runner) prepare(ctx context.Context, run pipeline.Run, p pipeline.Portfolio, area pipeline.ControlArea, msg fahrplan.Message) (SentSchedule, *pipeline.ScheduleMessage, error) {
	hash := contentHash(msg)
	msg.Version = 1
	latest, err := r.store.LatestSchedule(ctx, p.ID, run.Day, area)
	switch {
	case err == nil && latest.ContentHash == hash:
		return SentSchedule{Portfolio: p.ID, ControlArea: area, FileName: latest.FileName, ObjectKey: latest.ObjectKey,
			Version: latest.Version, Series: len(msg.Series)}, nil, nil
	case err == nil:
		msg.Version = latest.Version + 1
	case pipeline.KindOf(err) != pipeline.NotFound:
		return SentSchedule{}, nil, err
	}
	msg.Created = r.cfg.Now().UTC().Truncate(time.Second)
	name := msg.FileName()
	doc, err := fahrplan.Marshal(msg)
	if err != nil {
		return SentSchedule{}, nil, err
	}
	// The period calculation reads the schedule's balance from the record,
	// so it need not parse the document again.
	bought, sold := msg.Balance(msg.Sender)
	m := pipeline.ScheduleMessage{
		PortfolioID: p.ID, Day: run.Day, ControlArea: area, MessageID: msg.MessageID, Version: msg.Version,
		FileName: name, ObjectKey: OutboxPrefix + name, ContentHash: hash, Sender: msg.Sender, Receiver: msg.Receiver,
		RunID: run.ID, Status: pipeline.ScheduleSubmitted, SentAt: msg.Created,
		BoughtMW: bought, SoldMW: sold, Document: doc,
	}
	return SentSchedule{Portfolio: p.ID, ControlArea: area, FileName: name, ObjectKey: m.ObjectKey,
		Version: msg.Version, New: true, Series: len(msg.Series)}, &m, nil
}

// recordVersions records the run's new schedule versions within its commit.
// Each must be recorded as the version that prepare numbered, whose number
// its document carries: when another run recorded a version of the same
// schedule meanwhile, the commit fails as a Conflict and the stage runs
// again.
func (r *Runner) recordVersions(ctx context.Context, versions []pipeline.ScheduleMessage) error {
	for _, m := range versions {
		rec, created, err := r.store.RecordSchedule(ctx, m)
		if err != nil {
			return err
		}
		if !created || rec.Version != m.Version {
			return pipeline.Errorf(pipeline.Conflict, "schedule %s %s %s version %d was recorded by another run meanwhile",
				m.PortfolioID, m.Day, m.ControlArea, m.Version)
		}
	}
	return nil
}

// deliverBatch is how many undelivered schedule versions DeliverSchedules
// reads at a time.
const deliverBatch = 100

// DeliverSchedules writes the documents of committed schedule versions that
// are not in the outbox yet to the outbox, oldest first, and records each
// delivery; it returns how many it delivered. A crash between the commit of
// a schedules run and the delivery of its versions, or an outbox that
// failed, leaves them waiting here: the next schedules run and the
// scheduler's leader call it. A version is written again when a crash fell
// between its write and its record, with the same bytes, so the TSO channel
// sees the same file. It stops at the first failure, so that versions of one
// schedule reach the outbox in order.
func (r *Runner) DeliverSchedules(ctx context.Context) (int, error) {
	n := 0
	for {
		ms, err := r.store.UndeliveredSchedules(ctx, deliverBatch)
		if err != nil {
			return n, err
		}
		if len(ms) > 0 && r.outbox == nil {
			return n, errors.New("deliver schedules: the runner has no outbox")
		}
		for _, m := range ms {
			if err := r.outbox.Put(ctx, m.ObjectKey, bytes.NewReader(m.Document), int64(len(m.Document))); err != nil {
				return n, fmt.Errorf("deliver schedule %s: %w", m.ObjectKey, err)
			}
			marked, err := r.store.MarkScheduleDelivered(ctx, m.ID, r.cfg.Now())
			if err != nil {
				return n, fmt.Errorf("deliver schedule %s: %w", m.ObjectKey, err)
			}
			if !marked {
				continue // another process delivered it meanwhile
			}
			n++
			ev := map[string]any{"portfolio": m.PortfolioID, "control_area": m.ControlArea, "file_name": m.FileName,
				"object_key": m.ObjectKey, "version": m.Version, "message_id": m.MessageID, "run_id": m.RunID}
			// The document is the one source of what was sent, so the
			// event's series count is read from it.
			if doc, err := fahrplan.ParseSchedule(m.Document); err == nil {
				ev["series"] = len(doc.Series)
			}
			data, _ := json.Marshal(ev)
			day := m.Day
			if err := r.store.RecordEvent(ctx, pipeline.Event{At: r.cfg.Now(), Kind: "schedule.sent", PortfolioID: m.PortfolioID,
				Subject: m.FileName, DeliveryDay: &day, Data: data}); err != nil {
				r.log.WarnContext(ctx, "record event", "kind", "schedule.sent", "err", err)
			}
		}
		if len(ms) < deliverBatch {
			return n, nil
		}
	}
}

// scheduleRows builds the schedule dataset: one row per series and
// quarter-hour of every message of the run.
type scheduleRows struct {
	day                                                        pipeline.Day
	ts                                                         []int64
	b                                                          *array.RecordBuilder
	portfolio, area, file, series, business, inParty, outParty *array.BinaryDictionaryBuilder
}

func newScheduleRows(mem memory.Allocator, day pipeline.Day) *scheduleRows {
	b := array.NewRecordBuilder(mem, pipeline.ScheduleSchema)
	d := func(i int) *array.BinaryDictionaryBuilder { return b.Field(i).(*array.BinaryDictionaryBuilder) }
	return &scheduleRows{day: day, ts: day.QuarterStartsMicros(), b: b,
		portfolio: d(0), area: d(2), file: d(3), series: d(5), business: d(6), inParty: d(7), outParty: d(8)}
}

func (s *scheduleRows) add(portfolio string, area pipeline.ControlArea, m fahrplan.Message, file string) {
	date := s.b.Field(1).(*array.Date32Builder)
	ver := s.b.Field(4).(*array.Int32Builder)
	qh := s.b.Field(9).(*array.Int16Builder)
	ts := s.b.Field(10).(*array.TimestampBuilder)
	q := s.b.Field(11).(*array.Float64Builder)
	for _, ser := range m.Series {
		for i, v := range ser.Quantities {
			_ = s.portfolio.AppendString(portfolio)
			date.Append(s.day.Date32())
			_ = s.area.AppendString(string(area))
			_ = s.file.AppendString(file)
			ver.Append(int32(m.Version))
			_ = s.series.AppendString(ser.ID)
			_ = s.business.AppendString(ser.BusinessType)
			_ = s.inParty.AppendString(ser.InParty)
			_ = s.outParty.AppendString(ser.OutParty)
			qh.Append(int16(i))
			ts.Append(arrow.Timestamp(s.ts[i]))
			q.Append(v)
		}
	}
}

func (s *scheduleRows) record() arrow.RecordBatch { return s.b.NewRecordBatch() }
func (s *scheduleRows) release()                  { s.b.Release() }
