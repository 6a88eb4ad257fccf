package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/pipeline"
)

// TestPipelineOnDatabase wires the pipeline's endpoints to the real store:
// what the runner's store calls write is what the endpoints serve, and a
// trade import lands in the staging tables and the audit trail. The runner
// itself is the jobs package's to test; here it is a fake.
func TestPipelineOnDatabase(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		db := f.db
		f.srv = api.New(api.Config{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
			api.Deps{Keys: db, Portfolios: db, Staging: db, Audit: db, DB: db, Events: db,
				Results: db, Trades: db, Runner: &fakeRunner{}})

		// Trades: import, read back with the report key, re-send, and find
		// the import in the audit trail with the portfolio's data key.
		const tradesPath = "/v1/process/trades?day=2026-11-24&portfolio=p1"
		r := f.as("process", "PUT", tradesPath, tradesBody(96, ""))
		ack := r.json(t)
		if r.code != 200 || ack["status"] != "created" || ack["version"] != 1.0 {
			t.Fatalf("import: %d %s", r.code, r.body)
		}
		var trades api.TradesReport
		r = f.as("report1", "GET", "/v1/process/trades?day=2026-11-24", nil)
		if err := json.Unmarshal(r.body, &trades); err != nil || r.code != 200 || trades.Version != 1 || len(trades.Trades) != 2 ||
			trades.Trades[0].Counterparty != "11XSELLER-GMBH-1" || trades.Trades[1].Values[0] != 0.25 {
			t.Errorf("read back: %d %s", r.code, r.body)
		}
		if r := f.as("process", "PUT", tradesPath, tradesBody(96, "")); r.json(t)["status"] != "unchanged" {
			t.Errorf("re-send: %s", r.body)
		}
		r = f.as("data1", "GET", "/v1/submissions/"+ack["input_hash"].(string), nil)
		if reqs, _ := r.json(t)["requests"].([]any); r.code != 200 || len(reqs) != 2 ||
			reqs[0].(map[string]any)["endpoint"] != "PUT /v1/process/trades" || reqs[1].(map[string]any)["outcome"] != "unchanged" {
			t.Errorf("audit trail: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/trades?day=2026-11-25&portfolio=p1", nil); r.code != 404 {
			t.Errorf("no trades: %d %s", r.code, r.body)
		}

		// Positions and open position of a finished aggregate run.
		if r := f.as("process", "GET", "/v1/process/positions?day=2026-11-24", nil); r.code != 404 ||
			r.json(t)["detail"] != "no run has published positions for 2026-11-24 yet" {
			t.Errorf("before publishing: %d %s", r.code, r.body)
		}
		chain, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: day24, Trigger: "cron", StartedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		var stageRuns []pipeline.Run
		for _, st := range []pipeline.Stage{pipeline.StageForecast, pipeline.StageAggregate, pipeline.StageOpenPosition} {
			run, err := db.CreateRun(ctx, pipeline.Run{ParentID: &chain.ID, Stage: st, Day: day24, Trigger: "cron", StartedAt: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.FinishRun(ctx, run.ID, pipeline.RunSucceeded, "", json.RawMessage(`{"rows":1}`), now.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			stageRuns = append(stageRuns, run)
		}
		if err := db.FinishRun(ctx, chain.ID, pipeline.RunFailed, "stage schedules: object store unreachable", nil, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		ts := day24.QuarterStartsMicros()
		var pos []pipeline.PositionRow
		var open []pipeline.OpenPositionRow
		for qh := range ts {
			at := time.UnixMicro(ts[qh]).UTC()
			pos = append(pos,
				pipeline.PositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, ConsumptionMW: 12, ProductionMW: 2, NetMW: 10, Source: "generated"},
				pipeline.PositionRow{Portfolio: "p2", ControlArea: pipeline.Amprion, QH: qh, TS: at, ConsumptionMW: 1, NetMW: 1, Source: "submitted"})
			open = append(open, pipeline.OpenPositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, NetMW: 10, BoughtMW: 2.5, OpenMW: 7.5})
		}
		if err := db.PublishPositions(ctx, stageRuns[1].ID, day24, pos); err != nil {
			t.Fatal(err)
		}
		if err := db.PublishOpenPosition(ctx, stageRuns[2].ID, day24, open); err != nil {
			t.Fatal(err)
		}
		var rep api.PositionsReport
		r = f.as("process", "GET", "/v1/process/positions?day=2026-11-24", nil)
		if err := json.Unmarshal(r.body, &rep); err != nil || r.code != 200 || rep.RunID != stageRuns[1].ID || len(rep.Areas) != 2 ||
			len(rep.Areas[0].Series) != 96 || rep.Areas[0].Totals != (api.PositionTotals{ConsumptionMWh: 288, ProductionMWh: 48, NetMWh: 240}) ||
			!rep.Areas[0].Series[95].TS.Equal(time.Date(2026, 11, 24, 22, 45, 0, 0, time.UTC)) || rep.Areas[1].Source != "submitted" {
			t.Errorf("positions: %d %.300s", r.code, r.body)
		}
		r = f.as("report1", "GET", "/v1/process/positions?day=2026-11-24", nil)
		if err := json.Unmarshal(r.body, &rep); err != nil || r.code != 200 || len(rep.Areas) != 1 || rep.Areas[0].Portfolio != "p1" {
			t.Errorf("positions of the report key: %d %.300s", r.code, r.body)
		}
		var openRep api.OpenPositionReport
		r = f.as("process", "GET", "/v1/process/open-position?day=2026-11-24&portfolio=p2", nil)
		if err := json.Unmarshal(r.body, &openRep); err != nil || r.code != 200 || openRep.RunID != stageRuns[2].ID || len(openRep.Areas) != 0 {
			t.Errorf("open position of a portfolio without rows: %d %s", r.code, r.body)
		}
		r = f.as("report1", "GET", "/v1/process/open-position?day=2026-11-24", nil)
		if err := json.Unmarshal(r.body, &openRep); err != nil || r.code != 200 || len(openRep.Areas) != 1 ||
			openRep.Areas[0].Totals != (api.OpenPositionTotals{NetMWh: 240, BoughtMWh: 60, OpenMWh: 180}) {
			t.Errorf("open position: %d %.300s", r.code, r.body)
		}

		// Runs: the chain with its stage runs in order, and the list filters.
		var detail api.RunDetail
		r = f.as("process", "GET", "/v1/process/runs/"+jsonInt(chain.ID), nil)
		if err := json.Unmarshal(r.body, &detail); err != nil || r.code != 200 || detail.Status != pipeline.RunFailed ||
			detail.Error == "" || len(detail.Stages) != 3 || detail.Stages[0].Stage != pipeline.StageForecast ||
			detail.Stages[2].Stage != pipeline.StageOpenPosition {
			t.Errorf("chain run: %d %s", r.code, r.body)
		}
		var list api.RunList
		r = f.as("process", "GET", "/v1/process/runs?day=2026-11-24&stage=aggregate", nil)
		if err := json.Unmarshal(r.body, &list); err != nil || r.code != 200 || len(list.Runs) != 1 || list.Runs[0].ID != stageRuns[1].ID {
			t.Errorf("runs: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/runs/999999", nil); r.code != 404 || r.json(t)["detail"] != "run 999999 not found" {
			t.Errorf("unknown run: %d %s", r.code, r.body)
		}

		// Schedules: two versions of one message, the newest on top.
		for i, hash := range []string{"h1", "h2"} {
			if _, _, err := db.RecordSchedule(ctx, pipeline.ScheduleMessage{PortfolioID: "p1", Day: day24, ControlArea: pipeline.TenneT,
				MessageID: "SB-P1-TENNET", FileName: "f" + hash + ".XML", ObjectKey: "outbox/f" + hash + ".XML", ContentHash: hash,
				Sender: "11XSB-P1-------1", Receiver: "10XDE-EON-NETZ-C", RunID: chain.ID, SentAt: now.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		var sch api.SchedulesReport
		r = f.as("report1", "GET", "/v1/process/schedules?day=2026-11-24", nil)
		if err := json.Unmarshal(r.body, &sch); err != nil || r.code != 200 || len(sch.Areas) != 1 || sch.Areas[0].Version != 2 ||
			sch.Areas[0].FileName != "fh2.XML" || sch.Areas[0].Status != pipeline.ScheduleSubmitted || len(sch.Areas[0].Versions) != 2 {
			t.Errorf("schedules: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/process/schedules?day=2026-11-24&portfolio=p2", nil); r.code != 404 {
			t.Errorf("schedules of p2: %d %s", r.code, r.body)
		}

		// Events by delivery day and time range.
		for i, ev := range []pipeline.Event{
			{Kind: "run.failed", Subject: "chain", DeliveryDay: &day24},
			{Kind: "schedule.sent", PortfolioID: "p1", Subject: "fh2.XML", DeliveryDay: &day24},
			{Kind: "run.started", Subject: "forecast", DeliveryDay: &day26},
		} {
			ev.At = now.Add(time.Duration(i) * time.Hour)
			ev.Data = json.RawMessage(`{}`)
			if err := db.RecordEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			query string
			kinds []string
		}{
			{"day=2026-11-24", []string{"run.failed", "schedule.sent"}},
			{"from=2026-11-22T10:30:00Z", []string{"schedule.sent", "run.started"}},
			{"from=2026-11-22T09:30:00Z&to=2026-11-22T12:30:00%2B01:00", []string{"run.failed", "schedule.sent"}},
			{"kind=run.*&day=2026-11-26", []string{"run.started"}},
			{"portfolio=p1", []string{"schedule.sent"}},
		} {
			var evs []pipeline.Event
			r := f.as("process", "GET", "/v1/console/events?"+tt.query, nil)
			if err := json.Unmarshal(r.body, &evs); err != nil || r.code != 200 {
				t.Fatalf("events %s: %d %s", tt.query, r.code, r.body)
			}
			var kinds []string
			for _, e := range evs {
				kinds = append(kinds, e.Kind)
			}
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("events %s: %v, want %v", tt.query, kinds, tt.kinds)
			}
		}
	})
}
