package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

// tradesDay is a normal day of 96 quarter-hours.
var tradesDay = pipeline.NewDay(2026, 11, 24)

// trade is one trade of the test files, with n values from base on.
func trade(area pipeline.ControlArea, counterparty string, dir pipeline.Direction, unit pipeline.Unit, n int, base float64) pipeline.Trade {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = base + float64(i%8)/4
	}
	return pipeline.Trade{ControlArea: area, Counterparty: counterparty, Direction: dir, Unit: unit, Values: vals}
}

// tradesCSV writes trades as a trades CSV file with a header of 100 value
// columns, decimal commas with ';'.
func tradesCSV(sep string, day pipeline.Day, trades ...pipeline.Trade) []byte {
	var b strings.Builder
	b.WriteString(strings.Join([]string{"delivery_day", "control_area", "counterparty", "direction", "unit"}, sep))
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "%sv%d", sep, i)
	}
	b.WriteString("\n")
	for _, tr := range trades {
		b.WriteString(strings.Join([]string{day.String(), string(tr.ControlArea), tr.Counterparty, string(tr.Direction), string(tr.Unit)}, sep))
		for _, v := range tr.Values {
			s := fmt.Sprint(v)
			if sep == ";" {
				s = strings.Replace(s, ".", ",", 1)
			}
			b.WriteString(sep + s)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// tradesJSON writes the bulk JSON document of a trade set.
func tradesJSON(t *testing.T, day pipeline.Day, trades ...pipeline.Trade) []byte {
	t.Helper()
	if trades == nil {
		trades = []pipeline.Trade{}
	}
	b, err := json.Marshal(map[string]any{"delivery_day": day, "trades": trades})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// currentTrades reads the stored set and its version.
func currentTrades(t *testing.T, e *env) (pipeline.TradeSet, int) {
	t.Helper()
	set, version, err := e.db.Trades(context.Background(), "p1", tradesDay)
	if err != nil {
		t.Fatalf("stored trades: %v", err)
	}
	return set, version
}

// TestTradesFiles drops trade sets as CSV and JSON: the set replaces the
// stored one as a whole, the same content in another format answers
// unchanged with the same input hash, an empty JSON set clears the day, and
// an invalid file is rejected with nothing staged.
func TestTradesFiles(t *testing.T) {
	for _, c := range combos[:2] { // both databases on the local store
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, c)
			ctx := context.Background()
			p := e.processor(t, "A")
			first := []pipeline.Trade{
				trade(pipeline.TenneT, "11XEXCHANGE----X", pipeline.Buy, pipeline.MW, 96, 10),
				trade(pipeline.Amprion, "11XSWSE-DBA-VZRL", pipeline.Sell, pipeline.MWH, 96, 0.25),
			}
			e.put(t, "inbox/p1/trades/t.csv", tradesCSV(";", tradesDay, first...))
			if sum := scan(t, p); sum.Processed != 1 || sum.Seen != 1 {
				t.Fatalf("first scan = %+v", sum)
			}
			r := receipt(t, e, processedDir+"t.csv")
			if r.Status != "created" || r.Kind != "trades" || r.Format != "csv" || r.Counts["entries"] != 2 ||
				r.Counts["values"] != 192 || r.Version != 1 || len(r.InputHash) != 64 {
				t.Fatalf("receipt = %+v", r)
			}
			set, version := currentTrades(t, e)
			want := pipeline.TradeSet{Portfolio: "p1", Day: tradesDay, Trades: first}
			if version != 1 || !reflect.DeepEqual(set, want) {
				t.Fatalf("stored version %d: %+v, want %+v", version, set, want)
			}

			// The same set as gzip'd JSON and as ','-separated CSV again:
			// unchanged, same hash, no new version.
			e.put(t, "inbox/p1/trades/t.json.gz", gz(tradesJSON(t, tradesDay, first...)))
			e.put(t, "inbox/p1/trades/u.csv", tradesCSV(",", tradesDay, first...))
			if sum := scan(t, p); sum.Processed != 2 {
				t.Fatalf("re-drop scan = %+v", sum)
			}
			for _, k := range []string{"t.json.gz", "u.csv"} {
				if r2 := receipt(t, e, processedDir+k); r2.Status != "unchanged" || r2.InputHash != r.InputHash || r2.Version != 1 {
					t.Errorf("%s receipt = %+v, want unchanged with hash %s", k, r2, r.InputHash)
				}
			}
			if _, version := currentTrades(t, e); version != 1 {
				t.Errorf("re-drops made version %d", version)
			}

			// A smaller set replaces the whole set: the Amprion trade is gone.
			second := []pipeline.Trade{trade(pipeline.TenneT, "11XEXCHANGE----X", pipeline.Buy, pipeline.MW, 96, 11)}
			e.put(t, "inbox/p1/trades/v.json", tradesJSON(t, tradesDay, second...))
			if sum := scan(t, p); sum.Processed != 1 {
				t.Fatalf("replacing scan = %+v", sum)
			}
			if r3 := receipt(t, e, processedDir+"v.json"); r3.Status != "replaced" || r3.Version != 2 {
				t.Errorf("replacing receipt = %+v", r3)
			}
			if set, version := currentTrades(t, e); version != 2 || !reflect.DeepEqual(set.Trades, second) {
				t.Errorf("after replacing: version %d, %+v", version, set.Trades)
			}

			// An empty set clears the day.
			e.put(t, "inbox/p1/trades/clear.json", tradesJSON(t, tradesDay))
			if sum := scan(t, p); sum.Processed != 1 {
				t.Fatalf("clearing scan = %+v", sum)
			}
			if set, version := currentTrades(t, e); version != 3 || len(set.Trades) != 0 {
				t.Errorf("after clearing: version %d, %+v", version, set.Trades)
			}

			// Invalid files: an inactive control area (p1 trades in TenneT
			// and Amprion), a duplicate, a bad counterparty. Nothing staged.
			e.put(t, "inbox/p1/trades/area.csv", tradesCSV(";", tradesDay, trade(pipeline.FiftyHertz, "11XEXCHANGE----X", pipeline.Buy, pipeline.MW, 96, 1)))
			e.put(t, "inbox/p1/trades/dup.json", tradesJSON(t, tradesDay, second[0], second[0]))
			e.put(t, "inbox/p1/trades/eic.csv", tradesCSV(",", tradesDay, trade(pipeline.TenneT, "10YDE-EON------1", pipeline.Buy, pipeline.MW, 96, 1)))
			e.put(t, "inbox/p1/trades/t.parquet", []byte("PAR1"))
			if sum := scan(t, p); sum.Rejected != 4 || sum.Processed != 0 {
				t.Fatalf("invalid scan = %+v", sum)
			}
			d := errorsDoc(t, e, "rejected/p1/area.csv")
			if d.ErrorCount != 1 || d.Errors[0].Line != 2 || d.Errors[0].Column != "control_area" || d.Kind != "trades" ||
				d.Errors[0].Msg != "trades[0]: control area 50Hertz is not in the active set" {
				t.Errorf("area errors = %+v", d)
			}
			d = errorsDoc(t, e, "rejected/p1/dup.json")
			if d.ErrorCount != 1 || !strings.HasPrefix(d.Errors[0].Msg, "trades[1]: duplicate of trades[0] (TenneT, 11XEXCHANGE----X, buy)") {
				t.Errorf("duplicate errors = %+v", d)
			}
			d = errorsDoc(t, e, "rejected/p1/eic.csv")
			if d.ErrorCount != 1 || d.Errors[0].Type != "string_pattern_mismatch" || d.Errors[0].Column != "counterparty" || d.Errors[0].Line != 2 {
				t.Errorf("counterparty errors = %+v", d)
			}
			if d := errorsDoc(t, e, "rejected/p1/t.parquet"); !strings.Contains(d.Reason, "trades files cannot be PARQUET") {
				t.Errorf("parquet reason = %q", d.Reason)
			}
			if set, version := currentTrades(t, e); version != 3 || len(set.Trades) != 0 {
				t.Errorf("rejected files changed the set: version %d, %+v", version, set.Trades)
			}
			if left := e.keys(t, "inbox/"); len(left) != 0 {
				t.Fatalf("inbox still has %v", left)
			}
			evs, err := e.db.Events(ctx, pipeline.EventQuery{Kind: "inbox.*", Limit: 100})
			if err != nil || len(evs) != 9 { // five processed, four rejected
				t.Errorf("events = %d, %v", len(evs), err)
			}
		})
	}
}
