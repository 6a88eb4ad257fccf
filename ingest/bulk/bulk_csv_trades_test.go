package bulk

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/ingest/tradeset"
	"github.com/schedbridge/schedbridge/pipeline"
)

// trRowsOf writes a trade set as rows. unitCells tells whether a MW trade
// spells its unit, which is the API's default.
func trRowsOf(set pipeline.TradeSet, unitCells bool) []keyedRow {
	rows := make([]keyedRow, len(set.Trades))
	for i, tr := range set.Trades {
		unit := string(tr.Unit)
		if !unitCells && tr.Unit == pipeline.MW {
			unit = ""
		}
		rows[i].keys = [trKeys]string{set.Day.String(), string(tr.ControlArea), tr.Counterparty, string(tr.Direction), unit}
		for _, v := range tr.Values {
			rows[i].values = append(rows[i].values, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return rows
}

// trDocument is the bulk JSON document of an API body: the body with the
// delivery day as its first member.
func trDocument(day pipeline.Day, apiBody []byte) []byte {
	return append([]byte(`{"delivery_day": "`+day.String()+`", `), bytes.TrimPrefix(bytes.TrimSpace(apiBody), []byte("{"))...)
}

// TestBulkTradesSameContent: JSON documents and CSV files of both dialects,
// quoted, with their columns in another order, gzip'd, of the three kinds of
// day, give the API's input hash, trade set and canonical JSON, so that a
// set accepted through the API answers unchanged as a file and the other
// way round.
func TestBulkTradesSameContent(t *testing.T) {
	type sample struct {
		day  pipeline.Day
		body []byte
	}
	samples := []sample{
		{ingesttest.FallBack, ingesttest.ReadSample(t, "tradeset", "trades_2026-10-25.json")},
		{ingesttest.NormalDay, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 96), ingesttest.TradeJSON("50Hertz", "11XSWSE-DBA-VZRL", "sell", "MWH", 96), ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "sell", "MW", 96))},
		{ingesttest.SpringForward, ingesttest.TradesBody(ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "sell", "MWH", 92), ingesttest.TradeJSON("TransnetBW", "11XEXCHANGE----X", "buy", "", 92))},
	}
	semicolon := fcStyle{sep: ';', decimalComma: true, bom: true, crlf: true}
	styles := map[string]fcStyle{
		"semicolon-decimal-comma-bom-crlf.csv": semicolon,
		"comma-decimal-point.csv":              {sep: ','},
		"quoted-short-rows.csv":                {sep: ',', quoteAll: true, short: true},
		"quoted-decimal-comma.csv":             {sep: ';', decimalComma: true, quoteAll: true},
		"columns-in-any-order.csv": {sep: ',', order: []int{trDirection, trUnit, trCounterparty, trDeliveryDay, trControlArea},
			names: func(s string) string { return " " + strings.ToUpper(s[:1]) + s[1:] + " " }},
		"semicolon.csv.gz": semicolon,
	}
	for _, s := range samples {
		api, err := tradeset.DecodeTrades(s.body, s.day, ingesttest.AllAreas)
		if err != nil {
			t.Fatal(err)
		}
		var values int64
		for _, tr := range api.Set.Trades {
			values += int64(len(tr.Values))
		}
		want := apiAnswer{hash: api.InputHash, entries: len(api.Set.Trades), values: values,
			isBatch: func(b BulkBatch) bool {
				return b.Trades != nil && reflect.DeepEqual(*b.Trades, api.Set) && bytes.Equal(b.Canonical, api.Canonical)
			}}
		doc := trDocument(s.day, s.body)
		for name, st := range styles {
			for _, unitCells := range []bool{true, false} {
				t.Run(s.day.String()+"/"+name+"/unit cells "+strconv.FormatBool(unitCells), func(t *testing.T) {
					assertCSVAnswersLikeJSON(t, BulkTrades, name, trCSV(trRowsOf(api.Set, unitCells), st), "t.json", doc, want)
				})
			}
		}
		t.Run(s.day.String()+"/json.gz", func(t *testing.T) {
			var batches []BulkBatch
			res, err := decode(BulkTrades, "t.json.gz", gzipped(doc), BulkOptions{Rules: ingesttest.AllAreas}, func(b BulkBatch) error {
				batches = append(batches, b)
				return nil
			})
			if err != nil || res.InputHash != api.InputHash || res.Entries != want.entries || res.Values != values ||
				res.Format != FormatJSON || len(batches) != 1 || !want.isBatch(batches[0]) {
				t.Errorf("%v %+v", err, res)
			}
		})
	}
}

// TestBulkTradesEmptyJSON: a JSON document with no trades clears the day,
// with the API's hash for the empty set.
func TestBulkTradesEmptyJSON(t *testing.T) {
	api, err := tradeset.DecodeTrades([]byte(`{"trades": []}`), ingesttest.NormalDay, ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	var batches []BulkBatch
	res, err := decode(BulkTrades, "t.json", []byte(`{"delivery_day": "2026-03-28", "trades": [], "validate_only": true}`), BulkOptions{},
		func(b BulkBatch) error { batches = append(batches, b); return nil })
	if err != nil || res.InputHash != api.InputHash || res.Entries != 0 || !res.ValidateOnly || len(batches) != 1 ||
		batches[0].Trades == nil || len(batches[0].Trades.Trades) != 0 || batches[0].Trades.Day != ingesttest.NormalDay {
		t.Errorf("%v %+v %+v", err, res, batches)
	}
}

// TestBulkTradesJSONProblems: a JSON document is checked by the API's
// decoder, with delivery_day as a required field of its own.
func TestBulkTradesJSONProblems(t *testing.T) {
	tests := []struct {
		name, doc string
		rules     ingest.Rules
		want      []ingest.FileProblem
	}{
		{"missing delivery_day", `{"trades": []}`, ingesttest.AllAreas, []ingest.FileProblem{
			{Type: "missing", Loc: []any{"body", "delivery_day"}, Msg: "Field required", Input: map[string]any{"trades": []any{}}}}},
		{"bad day and trade", `{"delivery_day": "2026-3-28", "trades": [{"control_area": "TenneT", "counterparty": "11XEXCHANGE----X", "direction": "buy"}]}`, ingesttest.AllAreas, []ingest.FileProblem{
			{Type: "date_from_datetime_parsing", Loc: []any{"body", "delivery_day"}, Msg: "Input should be a valid date or datetime, input is too short",
				Input: "2026-3-28", Ctx: map[string]any{"error": "input is too short"}},
			{Type: "missing", Loc: []any{"body", "trades", 0, "values"}, Msg: "Field required",
				Input: map[string]any{"control_area": "TenneT", "counterparty": "11XEXCHANGE----X", "direction": "buy"}}}},
		{"business", string(trDocument(ingesttest.SpringForward, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 92), ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "buy", "", 96)))), ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}, []ingest.FileProblem{
			{Type: ingest.ProblemBusiness, Loc: []any{"body", "trades", 1}, Msg: "trades[1] has 96 intervals, expected 92 for 2026-03-29"},
			{Type: ingest.ProblemBusiness, Loc: []any{"body", "trades", 1}, Msg: "trades[1]: control area Amprion is not in the active set"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := decode(BulkTrades, "t.json", []byte(tt.doc), BulkOptions{Rules: tt.rules}, nil)
			fe := fileError(t, res, err)
			if got, want := ingesttest.MustJSON(t, fe.Problems), ingesttest.MustJSON(t, tt.want); got != want {
				t.Errorf("problems:\n got  %s\n want %s", got, want)
			}
		})
	}
}

// TestBulkTradesCSVProblems: each kind of problem of a trades CSV file, with
// its line, column and loc.
func TestBulkTradesCSVProblems(t *testing.T) {
	v96 := strings.Join(fcValues(96), ";")
	header := "delivery_day;control_area;counterparty;direction;unit"
	for j := 1; j <= 96; j++ {
		header += ";v" + strconv.Itoa(j)
	}
	row := func(day, area, counterparty, direction, unit, values string) string {
		return strings.Join([]string{day, area, counterparty, direction, unit, values}, ";") + "\n"
	}
	const eicMsg = "String should match pattern '^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$'"
	tests := []struct {
		name  string
		file  string
		rules ingest.Rules
		want  []wantProblem
	}{
		{"header without unit", "delivery_day;control_area;counterparty;direction;v1;v2\n", ingesttest.AllAreas, []wantProblem{
			{1, "", ingest.ProblemCSVHeader, "", `the first five columns of the header must be delivery_day, control_area, counterparty, direction, unit in any order, as in ` + trExample + `; column 5 is "v1"`, ""}}},
		{"header only", header + "\n", ingesttest.AllAreas, []wantProblem{
			{1, "", "missing", "body.delivery_day", `Field required: the file has a header but no rows, so nothing names its delivery_day; to clear a day's trades, drop a JSON file {"delivery_day": "YYYY-MM-DD", "trades": []}`, ""}}},
		{"schema problems", header + "\n" +
			row("2026-03-28", "TenneT", "11XEXCHANGE----X", "buy", "", v96) +
			row("2026-03-29", "TenneT", "10YDE-EON------1", "Buy", "KWH", v96) +
			row("2026-03-28", "", "11XEXCHANGE----X", "sell", "MW", "1;x") +
			row("2026-03-28", "Amprion", "11XEXCHANGE\xff---X", "", "", "1;2"), ingesttest.AllAreas, []wantProblem{
			{3, "delivery_day", ingest.ProblemCSVConflict, "body.delivery_day",
				`line 3: delivery_day "2026-03-29" differs from "2026-03-28" on line 2; a file holds the trades of one day, so all its rows have the same delivery_day`, `"2026-03-29"`},
			{3, "counterparty", "string_pattern_mismatch", "body.trades.1.counterparty", eicMsg, `"10YDE-EON------1"`},
			{3, "direction", "literal_error", "body.trades.1.direction", "Input should be 'buy' or 'sell'", `"Buy"`},
			{3, "unit", "literal_error", "body.trades.1.unit", "Input should be 'MW' or 'MWH'", `"KWH"`},
			{4, "control_area", "missing", "body.trades.2.control_area", "Field required",
				`{"counterparty": "11XEXCHANGE----X", "direction": "sell", "unit": "MW", "values": [1, "x"]}`},
			{4, "v2", "float_parsing", "body.trades.2.values.1", "Input should be a valid number, unable to parse string as a number", `"x"`},
			{5, "counterparty", "string_unicode", "body.trades.3.counterparty", "Input should be a valid string, unable to parse raw data as a unicode string", `"11XEXCHANGE\ufffd---X"`},
			{5, "direction", "missing", "body.trades.3.direction", "Field required", `{"control_area": "Amprion", "values": [1, 2]}`},
		}},
		{"business rules", header + "\n" +
			row("2026-03-29", "TenneT", "11XEXCHANGE----X", "buy", "", strings.Join(fcValues(92), ";")) +
			row("2026-03-29", "Amprion", "11XEXCHANGE----X", "buy", "MWH", strings.Join(fcValues(92), ";")) +
			row("2026-03-29", "TenneT", "11XEXCHANGE----X", "buy", "MW", v96), ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}, []wantProblem{
			{3, "control_area", ingest.ProblemBusiness, "body.trades.1", "trades[1]: control area Amprion is not in the active set", ""},
			{4, "", ingest.ProblemBusiness, "body.trades.2", "trades[2] has 96 intervals, expected 92 for 2026-03-29", ""},
			{4, "", ingest.ProblemBusiness, "body.trades.2", "trades[2]: duplicate of trades[0] (TenneT, 11XEXCHANGE----X, buy): a set has one trade per control area, counterparty and direction", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertWholeFileProblems(t, BulkTrades, "t", tt.file, tt.rules, tt.want)
		})
	}
}

// TestBulkTradesCSVProblemsAreTheAPIs: the schema problems of rows are the
// API's for the equivalent body, in its order.
func TestBulkTradesCSVProblemsAreTheAPIs(t *testing.T) {
	rows := []keyedRow{
		{keys: [trKeys]string{"2026-03-28", "TenneT", "11XEXCHANGE----X", "buy", ""}, values: []string{"1", "-2", "3"}},
		{keys: [trKeys]string{"2026-03-28", "", "", "", ""}, values: []string{"1.5", "abc"}},
		{keys: [trKeys]string{"2026-03-28", "50Hertz", "11YEXCHANGE----X", "sell", "kwh"}, values: []string{"1e999"}},
	}
	file := trCSV(rows, fcStyle{sep: ',', short: true})
	body := []byte(`{"delivery_day": "2026-03-28", "trades": [
		{"control_area": "TenneT", "counterparty": "11XEXCHANGE----X", "direction": "buy", "values": [1, -2, 3]},
		{"values": [1.5, "abc"]},
		{"control_area": "50Hertz", "counterparty": "11YEXCHANGE----X", "direction": "sell", "unit": "kwh", "values": [1e999]}]}`)
	_, apiErr := tradeset.DecodeDocument(body, nil, ingesttest.AllAreas)
	api := apiProblems(t, apiErr, nil)
	if len(api) != 8 {
		t.Fatalf("the API reports %d problems:\n%s", len(api), problemJSON(t, api))
	}
	assertProblemsAreTheAPIs(t, BulkTrades, "t.csv", file, ingesttest.AllAreas, api, func(loc []any) int { return loc[2].(int) + 2 })
}

func TestBulkTradesCSVTooLarge(t *testing.T) {
	api, err := tradeset.DecodeTrades(ingesttest.ReadSample(t, "tradeset", "trades_2026-10-25.json"), ingesttest.FallBack, ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	data := trCSV(trRowsOf(api.Set, false), fcStyle{sep: ';', decimalComma: true})
	res := assertTooLarge(t, BulkTrades, "t", "trades", data, "2026-10-25;TenneT;11XEXCHANGE----X;buy;MW;x\n")
	if res.InputHash != api.InputHash || res.Entries != 2 {
		t.Errorf("at the limit: %+v", res)
	}
}

func TestBulkTradesCSVEmitAndContext(t *testing.T) {
	api, err := tradeset.DecodeTrades(ingesttest.ReadSample(t, "tradeset", "trades_2026-10-25.json"), ingesttest.FallBack, ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	assertEmitAndContext(t, BulkTrades, "t.csv", trCSV(trRowsOf(api.Set, true), fcStyle{sep: ','}))
}
