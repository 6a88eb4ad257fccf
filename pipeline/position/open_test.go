package position_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/position"
)

// positionsOf runs generated rows through the Aggregator to get a real
// PositionSchema record.
func positionsOf(t *testing.T, mem memory.Allocator, day pipeline.Day, rows []fmRow, subs []position.Submitted) arrow.RecordBatch {
	t.Helper()
	agg := position.NewAggregator(day)
	if len(rows) > 0 {
		rec := forecastBatch(t, mem, day, rows)
		defer rec.Release()
		if err := agg.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	pos, err := agg.Positions(mem, subs)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

type openWant struct {
	portfolio              string
	area                   pipeline.ControlArea
	net, bought, sold, opn float64
}

func TestOpen(t *testing.T) {
	trade := func(area pipeline.ControlArea, dir pipeline.Direction, unit pipeline.Unit, n int, v float64) pipeline.Trade {
		return pipeline.Trade{ControlArea: area, Counterparty: "11XEXCHANGE----1", Direction: dir, Unit: unit, Values: fill(n, v)}
	}
	cases := []struct {
		name   string
		day    pipeline.Day
		rows   []fmRow
		trades []pipeline.TradeSet
		want   []openWant
	}{
		{
			// p1 TenneT: net 5 - 0 = 5 MW; bought 2 MW + 0.25 MWh (1 MW) = 3,
			// sold 0.5 MW: open = 5 - 3 + 0.5 = 2.5.
			// p1 Amprion: net 0 - 2 = -2 MW; sold 1 MWh = 4 MW: open = -2 + 4 = 2.
			// p1 50Hertz: no position, bought 3 MW: net 0, open -3.
			// p3: no position at all, sold 250 kWh = 1 MW: open 1.
			// p2 TransnetBW: position 7 MW and no trades: open 7.
			name: "buy and sell in MW, MWH and KWH",
			day:  normalDay,
			rows: concat(
				series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 96, constant(5)),
				series("p1", "m2", pipeline.Amprion, pipeline.Production, pipeline.SourceHistory, 96, constant(2)),
				series("p2", "m3", pipeline.TransnetBW, pipeline.Consumption, pipeline.SourceHistory, 96, constant(7)),
			),
			trades: []pipeline.TradeSet{
				{Portfolio: "p3", Day: normalDay, Trades: []pipeline.Trade{trade(pipeline.TenneT, pipeline.Sell, pipeline.KWH, 96, 250)}},
				{Portfolio: "p1", Day: normalDay, Trades: []pipeline.Trade{
					trade(pipeline.TenneT, pipeline.Buy, pipeline.MW, 96, 2),
					trade(pipeline.TenneT, pipeline.Buy, pipeline.MWH, 96, 0.25),
					trade(pipeline.TenneT, pipeline.Sell, pipeline.MW, 96, 0.5),
					trade(pipeline.Amprion, pipeline.Sell, pipeline.MWH, 96, 1),
					trade(pipeline.FiftyHertz, pipeline.Buy, pipeline.MW, 96, 3),
				}},
			},
			want: []openWant{
				{"p1", pipeline.FiftyHertz, 0, 3, 0, -3},
				{"p1", pipeline.Amprion, -2, 0, 4, 2},
				{"p1", pipeline.TenneT, 5, 3, 0.5, 2.5},
				{"p2", pipeline.TransnetBW, 7, 0, 0, 7},
				{"p3", pipeline.TenneT, 0, 0, 1, 1},
			},
		},
		{
			name: "spring-forward day",
			day:  springDay,
			rows: series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 92, constant(4)),
			trades: []pipeline.TradeSet{{Portfolio: "p1", Day: springDay, Trades: []pipeline.Trade{
				trade(pipeline.TenneT, pipeline.Buy, pipeline.MWH, 92, 0.5),
			}}},
			want: []openWant{{"p1", pipeline.TenneT, 4, 2, 0, 2}},
		},
		{
			name: "trades only, fall-back day taken from the trade set",
			day:  fallDay,
			trades: []pipeline.TradeSet{{Portfolio: "p1", Day: fallDay, Trades: []pipeline.Trade{
				trade(pipeline.Amprion, pipeline.Sell, pipeline.MW, 100, 1.25),
			}}},
			want: []openWant{{"p1", pipeline.Amprion, 0, 0, 1.25, 1.25}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			pos := positionsOf(t, mem, tc.day, tc.rows, nil)
			defer pos.Release()
			open, err := position.Open(mem, pos, tc.trades)
			if err != nil {
				t.Fatal(err)
			}
			defer open.Release()
			if !open.Schema().Equal(pipeline.OpenPositionSchema) {
				t.Fatalf("schema %s", open.Schema())
			}
			rows := position.OpenRows(open)
			n := tc.day.Intervals()
			if len(rows) != n*len(tc.want) {
				t.Fatalf("%d rows, want %d", len(rows), n*len(tc.want))
			}
			ts := tc.day.QuarterStartsMicros()
			for bi, w := range tc.want {
				for q := range n {
					r := rows[bi*n+q]
					if r.Portfolio != w.portfolio || r.ControlArea != w.area || r.QH != q || !r.TS.Equal(time.UnixMicro(ts[q])) ||
						!near(r.NetMW, w.net) || !near(r.BoughtMW, w.bought) || !near(r.SoldMW, w.sold) || !near(r.OpenMW, w.opn) {
						t.Fatalf("row %d = %+v, want %+v at qh %d", bi*n+q, r, w, q)
					}
				}
			}
		})
	}
}

func TestOpenInvalid(t *testing.T) {
	ok := func(n int) pipeline.Trade {
		return pipeline.Trade{ControlArea: pipeline.TenneT, Direction: pipeline.Buy, Unit: pipeline.MW, Values: fill(n, 1)}
	}
	with := func(mod func(*pipeline.Trade)) []pipeline.Trade {
		tr := ok(96)
		mod(&tr)
		return []pipeline.Trade{tr}
	}
	cases := []struct {
		name string
		sets []pipeline.TradeSet
		kind pipeline.ErrorKind
	}{
		{"length of a 92 day", []pipeline.TradeSet{{Portfolio: "p1", Day: normalDay, Trades: []pipeline.Trade{ok(92)}}}, pipeline.Invalid},
		{"length of a 100 day", []pipeline.TradeSet{{Portfolio: "p1", Trades: []pipeline.Trade{ok(100)}}}, pipeline.Invalid},
		{"other day", []pipeline.TradeSet{{Portfolio: "p1", Day: fallDay, Trades: []pipeline.Trade{ok(100)}}}, pipeline.Invalid},
		{"unknown direction", []pipeline.TradeSet{{Portfolio: "p1", Trades: with(func(t *pipeline.Trade) { t.Direction = "swap" })}}, pipeline.Invalid},
		{"negative quantity", []pipeline.TradeSet{{Portfolio: "p1", Trades: with(func(t *pipeline.Trade) { t.Values[3] = -1 })}}, pipeline.Invalid},
		{"unknown area", []pipeline.TradeSet{{Portfolio: "p1", Trades: with(func(t *pipeline.Trade) { t.ControlArea = "Elia" })}}, pipeline.Invalid},
		{"unknown unit", []pipeline.TradeSet{{Portfolio: "p1", Trades: with(func(t *pipeline.Trade) { t.Unit = "GWH" })}}, pipeline.Invalid},
		{"two sets of one portfolio", []pipeline.TradeSet{{Portfolio: "p1", Trades: []pipeline.Trade{ok(96)}}, {Portfolio: "p1"}}, pipeline.Conflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			pos := positionsOf(t, mem, normalDay, series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 96, constant(1)), nil)
			defer pos.Release()
			open, err := position.Open(mem, pos, tc.sets)
			if err == nil {
				open.Release()
			}
			if pipeline.KindOf(err) != tc.kind {
				t.Fatalf("err = %v, want %s", err, tc.kind)
			}
		})
	}
}

func TestOpenEmpty(t *testing.T) {
	mem := checked(t)
	pos := positionsOf(t, mem, normalDay, nil, nil)
	defer pos.Release()
	open, err := position.Open(mem, pos, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Release()
	if open.NumRows() != 0 || !open.Schema().Equal(pipeline.OpenPositionSchema) {
		t.Fatalf("open = %d rows, schema %s", open.NumRows(), open.Schema())
	}
}
