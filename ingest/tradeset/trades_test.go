package tradeset

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// problem is an expected schema problem (see ingesttest.Want).
type problem ingesttest.Want

// TestTradesValid decodes the three kinds of delivery day, and checks the
// default unit, the values and the canonical form.
func TestTradesValid(t *testing.T) {
	for _, tt := range []struct {
		day pipeline.Day
		n   int
	}{{ingesttest.NormalDay, 96}, {ingesttest.SpringForward, 92}, {ingesttest.FallBack, 100}} {
		t.Run(tt.day.String(), func(t *testing.T) {
			body := ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", tt.n), ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "buy", "MWH", tt.n), ingesttest. // another area: no duplicate
																										TradeJSON("TenneT", "11XEXCHANGE----X", "sell", "MW", tt.n), // another direction: no duplicate
			)
			sub, err := DecodeTrades(body, tt.day, ingesttest.AllAreas)
			if err != nil {
				t.Fatal(err)
			}
			set := sub.Set
			if set.Day != tt.day || set.Portfolio != "" || len(set.Trades) != 3 || sub.ValidateOnly {
				t.Fatalf("got %+v", sub)
			}
			t0, t1 := set.Trades[0], set.Trades[1]
			if t0.ControlArea != pipeline.TenneT || t0.Counterparty != "11XEXCHANGE----X" || t0.Direction != pipeline.Buy ||
				t0.Unit != pipeline.MW || len(t0.Values) != tt.n || t0.Values[3] != 0.75 {
				t.Errorf("trades[0] = %+v", t0)
			}
			if t1.ControlArea != pipeline.Amprion || t1.Unit != pipeline.MWH || set.Trades[2].Direction != pipeline.Sell {
				t.Errorf("trades[1] = %+v, trades[2] = %+v", t1, set.Trades[2])
			}
			if len(sub.InputHash) != 64 || sub.InputHash != ingest.InputHash(sub.Canonical) {
				t.Errorf("input hash %q", sub.InputHash)
			}
			if !bytes.HasPrefix(sub.Canonical, []byte(`{"delivery_day":"`+tt.day.String()+`","trades":[{"control_area":"TenneT","counterparty":"11XEXCHANGE----X","direction":"buy","unit":"MW","values":[0,0.25,`)) {
				t.Errorf("canonical = %.200s", sub.Canonical)
			}
		})
	}
}

// TestTradesCanonical pins the canonical encoding of the sample (a change
// would change every trades input hash) and holds it to its definition:
// json.Marshal of the day and the pipeline values, whose fields are in
// sorted order.
func TestTradesCanonical(t *testing.T) {
	body := ingesttest.ReadTestdata(t, "trades_2026-10-25.json")
	sub, err := DecodeTrades(body, ingesttest.FallBack, ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "trades_2026-10-25.canonical")
	if *ingesttest.Update {
		if err := os.WriteFile(golden, sub.Canonical, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sub.Canonical, want) {
		t.Errorf("canonical encoding changed:\n got  %s\n want %s", sub.Canonical, want)
	}
	direct, err := json.Marshal(struct {
		Day    pipeline.Day     `json:"delivery_day"`
		Trades []pipeline.Trade `json:"trades"`
	}{sub.Set.Day, sub.Set.Trades})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(direct, sub.Canonical) {
		t.Errorf("differs from json.Marshal:\n got  %s\n want %s", sub.Canonical, direct)
	}
	// The sample spells values as 1.375, 6, 1.52e+01, 0.000024, 12.50.
	if v := sub.Set.Trades[0].Values; v[0] != 1.375 || v[1] != 6 || v[3] != 15.2 || v[5] != 0.000024 || v[6] != 12.5 {
		t.Errorf("values = %v", v[:7])
	}
}

// TestTradesInputHash: the hash follows the content and the day, not the
// spelling.
func TestTradesInputHash(t *testing.T) {
	a := ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 96))
	spelled := []byte(`{ "validate_only": true, "extra": [1], "trades": [ {"values": ` + strings.ReplaceAll(ingesttest.Nums(96), ",", ", ") +
		`, "unit": "MW", "direction": "buy", "counterparty": "11XEXCHANGE----X", "control_area": "TenneT"} ] }`)
	hash := func(body []byte, day pipeline.Day) string {
		t.Helper()
		sub, err := DecodeTrades(body, day, ingesttest.AllAreas)
		if err != nil {
			t.Fatal(err)
		}
		return sub.InputHash
	}
	if hash(a, ingesttest.NormalDay) != hash(spelled, ingesttest.NormalDay) {
		t.Error("the same content spelled differently has another hash")
	}
	if hash(a, ingesttest.NormalDay) == hash(a, pipeline.NewDay(2026, 3, 27)) {
		t.Error("the same trades for another day have the same hash")
	}
	other := ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "sell", "", 96))
	if hash(a, ingesttest.NormalDay) == hash(other, ingesttest.NormalDay) {
		t.Error("another direction has the same hash")
	}
	if sub, _ := DecodeTrades(spelled, ingesttest.NormalDay, ingesttest.AllAreas); !sub.ValidateOnly {
		t.Error("validate_only lost")
	}
}

// TestTradesEmpty: an empty list is a valid set, which clears the day.
func TestTradesEmpty(t *testing.T) {
	sub, err := DecodeTrades([]byte(`{"trades": []}`), ingesttest.SpringForward, ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Set.Trades == nil || len(sub.Set.Trades) != 0 || sub.Set.Day != ingesttest.SpringForward {
		t.Errorf("set = %+v", sub.Set)
	}
	if want := `{"delivery_day":"2026-03-29","trades":[]}`; string(sub.Canonical) != want {
		t.Errorf("canonical = %s, want %s", sub.Canonical, want)
	}
}

func TestTradesSchemaProblems(t *testing.T) {
	v96 := ingesttest.Nums(96)
	one := func(fields string) []byte { return []byte(`{"trades":[{` + fields + `}]}`) }
	const ok = `"control_area":"TenneT","counterparty":"11XEXCHANGE----X","direction":"buy"`
	const eicCtx = `{"pattern":"^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$"}`
	const eicMsg = "String should match pattern '^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$'"
	tests := []struct {
		name string
		body []byte
		want []problem
	}{
		{"no body", nil, []problem{{"missing", "body", "Field required", "", "null"}}},
		{"not an object", []byte(`[1]`), []problem{
			{"model_attributes_type", "body", "Input should be a valid dictionary or object to extract fields from", "", "[1]"}}},
		{"malformed", []byte(`{"trades": [}`), []problem{
			{"json_invalid", "body.12", "JSON decode error", `{"error":"Expecting value"}`, "{}"}}},
		{"missing trades", []byte(`{"delivery_day": "2026-03-28"}`), []problem{
			{"missing", "body.trades", "Field required", "", `{"delivery_day": "2026-03-28"}`}}},
		{"trades null", []byte(`{"trades": null}`), []problem{
			{"list_type", "body.trades", "Input should be a valid list", "", "null"}}},
		{"trades not a list", []byte(`{"trades": {"a": 1}}`), []problem{
			{"list_type", "body.trades", "Input should be a valid list", "", `{"a": 1}`}}},
		{"trades of numbers", []byte(`{"trades": [1, "x"]}`), []problem{
			{"model_type", "body.trades.0", "Input should be a valid dictionary or instance of Trade", `{"class_name":"Trade"}`, "1"},
			{"model_type", "body.trades.1", "Input should be a valid dictionary or instance of Trade", `{"class_name":"Trade"}`, `"x"`}}},
		{"empty trade", one(``), []problem{
			{"missing", "body.trades.0.control_area", "Field required", "", "{}"},
			{"missing", "body.trades.0.counterparty", "Field required", "", "{}"},
			{"missing", "body.trades.0.direction", "Field required", "", "{}"},
			{"missing", "body.trades.0.values", "Field required", "", "{}"}}},
		{"control_area not a string", one(`"control_area":1,"counterparty":"11XEXCHANGE----X","direction":"buy","values":` + v96), []problem{
			{"string_type", "body.trades.0.control_area", "Input should be a valid string", "", "1"}}},
		{"counterparty not a string", one(`"control_area":"TenneT","counterparty":11,"direction":"buy","values":` + v96), []problem{
			{"string_type", "body.trades.0.counterparty", "Input should be a valid string", "", "11"}}},
		{"counterparty of type Y", one(`"control_area":"TenneT","counterparty":"10YDE-EON------1","direction":"buy","values":` + v96), []problem{
			{"string_pattern_mismatch", "body.trades.0.counterparty", eicMsg, eicCtx, `"10YDE-EON------1"`}}},
		{"counterparty too short", one(`"control_area":"TenneT","counterparty":"11XEXCHANGE---X","direction":"buy","values":` + v96), []problem{
			{"string_pattern_mismatch", "body.trades.0.counterparty", eicMsg, eicCtx, `"11XEXCHANGE---X"`}}},
		{"counterparty lower case", one(`"control_area":"TenneT","counterparty":"11xexchange----x","direction":"buy","values":` + v96), []problem{
			{"string_pattern_mismatch", "body.trades.0.counterparty", eicMsg, eicCtx, `"11xexchange----x"`}}},
		{"counterparty with a trailing space", one(`"control_area":"TenneT","counterparty":"11XEXCHANGE----X ","direction":"buy","values":` + v96), []problem{
			{"string_pattern_mismatch", "body.trades.0.counterparty", eicMsg, eicCtx, `"11XEXCHANGE----X "`}}},
		{"direction", one(`"control_area":"TenneT","counterparty":"11XEXCHANGE----X","direction":"Buy","values":` + v96), []problem{
			{"literal_error", "body.trades.0.direction", "Input should be 'buy' or 'sell'", `{"expected":"'buy' or 'sell'"}`, `"Buy"`}}},
		{"unit KWH", one(ok + `,"unit":"KWH","values":` + v96), []problem{
			{"literal_error", "body.trades.0.unit", "Input should be 'MW' or 'MWH'", `{"expected":"'MW' or 'MWH'"}`, `"KWH"`}}},
		{"unit null is not the default", one(ok + `,"unit":null,"values":` + v96), []problem{
			{"literal_error", "body.trades.0.unit", "Input should be 'MW' or 'MWH'", `{"expected":"'MW' or 'MWH'"}`, "null"}}},
		{"values not a list", one(ok + `,"values":"1,2"`), []problem{
			{"list_type", "body.trades.0.values", "Input should be a valid list", "", `"1,2"`}}},
		{"bad values", one(ok + `,"values":[0,"1.5",-0.5,1e400,null]`), []problem{
			{"float_parsing", "body.trades.0.values.1", "Input should be a valid number, unable to parse string as a number", "", `"1.5"`},
			{"greater_than_equal", "body.trades.0.values.2", "Input should be greater than or equal to 0", `{"ge":0}`, "-0.5"},
			{"finite_number", "body.trades.0.values.3", "Input should be a finite number", "", "1e400"},
			{"float_type", "body.trades.0.values.4", "Input should be a valid number", "", "null"}}},
		{"validate_only", []byte(`{"trades": [], "validate_only": "yes"}`), []problem{
			{"bool_parsing", "body.validate_only", "Input should be a valid boolean, unable to interpret input", "", `"yes"`}}},
		{"every trade is reported", []byte(`{"trades":[` + ingesttest.TradeJSON("TenneT", "X", "buy", "", 96) + `,` + ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "hold", "", 96) + `]}`), []problem{
			{"string_pattern_mismatch", "body.trades.0.counterparty", eicMsg, eicCtx, `"X"`},
			{"literal_error", "body.trades.1.direction", "Input should be 'buy' or 'sell'", `{"expected":"'buy' or 'sell'"}`, `"hold"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrades(tt.body, ingesttest.NormalDay, ingesttest.AllAreas)
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

func TestTradesBusinessRules(t *testing.T) {
	tenneT := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	tests := []struct {
		name  string
		day   pipeline.Day
		rules ingest.Rules
		body  []byte
		want  []string
	}{
		{"96 on the spring-forward day", ingesttest.SpringForward, ingesttest.AllAreas, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 96)), []string{"trades[0] has 96 intervals, expected 92 for 2026-03-29"}},
		{"96 on the fall-back day", ingesttest.FallBack, ingesttest.AllAreas, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 96)), []string{"trades[0] has 96 intervals, expected 100 for 2026-10-25"}},
		{"100 on a normal day", ingesttest.NormalDay, ingesttest.AllAreas, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 100)), []string{"trades[0] has 100 intervals, expected 96 for 2026-03-28"}},
		{"inactive and unknown areas", ingesttest.NormalDay, tenneT, ingesttest.TradesBody(ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "buy", "", 96), ingesttest.TradeJSON("tennet", "11XEXCHANGE----X", "buy", "", 96)), []string{"trades[0]: control area Amprion is not in the active set", "trades[1]: control area tennet is not in the active set"}},
		{"duplicates", ingesttest.NormalDay, ingesttest.AllAreas, ingesttest.TradesBody(ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "", 96), ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "sell", "", 96), ingesttest.TradeJSON("TenneT", "11XEXCHANGE----X", "buy", "MWH", 96), ingesttest. // another unit is still the same trade
																																								TradeJSON("TenneT", "11XEXCHANGE----X", "sell", "", 96)), []string{
			"trades[2]: duplicate of trades[0] (TenneT, 11XEXCHANGE----X, buy): a set has one trade per control area, counterparty and direction",
			"trades[3]: duplicate of trades[1] (TenneT, 11XEXCHANGE----X, sell): a set has one trade per control area, counterparty and direction",
		}},
		{"all rules in the API's order", ingesttest.SpringForward, tenneT, ingesttest.TradesBody(ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "buy", "", 96), ingesttest.TradeJSON("Amprion", "11XEXCHANGE----X", "buy", "", 92)), []string{
			"trades[0] has 96 intervals, expected 92 for 2026-03-29",
			"trades[0]: control area Amprion is not in the active set",
			"trades[1]: control area Amprion is not in the active set",
			"trades[1]: duplicate of trades[0] (Amprion, 11XEXCHANGE----X, buy): a set has one trade per control area, counterparty and direction",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeTrades(tt.body, tt.day, tt.rules)
			ingesttest.CheckMessages(t, err, tt.want...)
		})
	}
}

func TestQueryDay(t *testing.T) {
	if d, err := QueryDay("day", "2026-03-29", true); err != nil || d != ingesttest.SpringForward {
		t.Errorf("valid: %v %v", d, err)
	}
	_, err := QueryDay("day", "", false)
	ingesttest.CheckProblems(t, err, []problem{{"missing", "query.day", "Field required", "", "null"}})
	_, err = QueryDay("day", "2026-02-30", true)
	ingesttest.CheckProblems(t, err, []problem{{"date_from_datetime_parsing", "query.day",
		"Input should be a valid date or datetime, day value is outside expected range",
		`{"error":"day value is outside expected range"}`, `"2026-02-30"`}})
}
