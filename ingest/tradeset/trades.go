package tradeset

import (
	"fmt"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// TradesSubmission is a validated body of PUT /v1/process/trades: the whole
// trade set of a portfolio for one delivery day, which replaces the stored set.
type TradesSubmission struct {
	// Set holds the delivery day and the trades; Portfolio is left empty for
	// the caller, who knows whose set it is.
	Set          pipeline.TradeSet
	ValidateOnly bool
	InputHash    string // hex SHA-256 of Canonical
	// Canonical is the canonical JSON of the set without the portfolio:
	// {"delivery_day": ..., "trades": [...]}. The day is part of it although
	// the API takes it from the query, so that a bulk file, which names the
	// day in its body, has the same hash for the same content.
	Canonical []byte
}

// DecodeTrades decodes and validates a trades body (model TradesSubmission:
// trades, validate_only) for the delivery day given in the query. An empty
// trades list is valid: it clears the day's trades. Errors are
// *ingest.SchemaError or *ingest.BusinessError.
func DecodeTrades(body []byte, day pipeline.Day, r ingest.Rules) (*TradesSubmission, error) {
	return DecodeDocument(body, &day, r)
}

// DecodeDocument decodes the API body when day is given, or else the bulk
// document {"delivery_day": ..., "trades": [...], "validate_only": ...},
// whose delivery_day is then a required field before trades.
func DecodeDocument(body []byte, day *pipeline.Day, r ingest.Rules) (*TradesSubmission, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := ingest.BodyPath()
	set := pipeline.TradeSet{}
	if day != nil {
		set.Day = *day
	} else {
		c.DateField(root, loc, "delivery_day", ingest.Required, &set.Day)
	}
	validateOnly := false
	tradeList(c, root, loc, &set.Trades)
	c.Flag(root, loc, "validate_only", &validateOnly)
	if err := c.Err(); err != nil {
		return nil, err
	}
	var out ingest.Findings
	TradeFindings(&set, r, func(_ int, _, msg string) { out.Addf("%s", msg) })
	if err := out.Err(); err != nil {
		return nil, err
	}
	canonical := CanonicalTrades(&set, len(body))
	return &TradesSubmission{Set: set, ValidateOnly: validateOnly, InputHash: ingest.InputHash(canonical), Canonical: canonical}, nil
}

// tradeList validates the required list of trades into dst. Unlike the
// lists of the other models it may be empty, since an empty set is how a
// day's trades are withdrawn.
func tradeList(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, dst *[]pipeline.Trade) bool {
	if v := obj.Field("trades"); v != nil && v.Kind == ingest.KindArray && len(c.Elems(v)) == 0 {
		*dst = []pipeline.Trade{}
		return true
	}
	return ingest.List(c, obj, loc, "trades", ingest.Required, tradeModel, dst)
}

// tradeModel validates one Trade.
func tradeModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (pipeline.Trade, bool) {
	t := pipeline.Trade{Unit: pipeline.MW}
	if !c.Model(loc, n, "Trade") {
		return t, false
	}
	ok := TradeKeys(c, n, loc, &t)
	ok = c.Quantities(n, loc, "values", &t.Values) && ok
	return t, ok
}

// TradeKeys validates the fields of a Trade before its values; a trades CSV
// row has its values checked as CSV cells instead.
func TradeKeys(c *ingest.Checker, n *ingest.Node, loc ingest.Path, t *pipeline.Trade) bool {
	ok := ingest.Text(c, n, loc, "control_area", ingest.Required, ingest.AnyText, &t.ControlArea)
	ok = counterparty(c, n, loc, &t.Counterparty) && ok
	ok = ingest.Choice(c, n, loc, "direction", ingest.Required, directions, &t.Direction) && ok
	ok = ingest.Choice(c, n, loc, "unit", ingest.Defaulted, ingest.ForecastUnits, &t.Unit) && ok
	return ok
}

// directions is the Literal of Trade.direction.
var directions = ingest.NewLiteral(string(pipeline.Buy), string(pipeline.Sell))

// counterparty validates the required counterparty field: the EIC of a
// balancing group, reported as a pattern mismatch like any constrained
// string.
func counterparty(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, dst *string) bool {
	v, ok := c.Lookup(obj, loc, "counterparty", ingest.Required)
	if v == nil {
		return ok
	}
	l := loc.At("counterparty")
	s, ok := c.Text(l, v, ingest.AnyText)
	if !ok {
		return false
	}
	if !isBalancingGroup(s) {
		c.Fail(l, "string_pattern_mismatch", "String should match pattern '"+ingest.BalancingGroupPattern+"'", v,
			map[string]any{"pattern": ingest.BalancingGroupPattern})
		return false
	}
	*dst = s
	return true
}

// isBalancingGroup reports whether s is the EIC of a balancing group: 16
// characters of EIC shape whose type letter, the third character, is X.
func isBalancingGroup(s string) bool { return pipeline.ValidEIC(s) && s[2] == 'X' }

// TradeFindings applies the business rules of a trade set in the API's
// order and reports each broken one with the trade it is about and the
// field that breaks it ("values", "control_area"; "" for a duplicate, which
// no single field makes), so that a CSV file can point at the row and
// column as well as give the API's message.
func TradeFindings(set *pipeline.TradeSet, r ingest.Rules, report func(trade int, field, msg string)) {
	want := set.Day.Intervals()
	for i, t := range set.Trades {
		if len(t.Values) != want {
			report(i, "values", fmt.Sprintf("trades[%d] has %d intervals, expected %d for %s", i, len(t.Values), want, set.Day))
		}
		if !r.Active.Has(string(t.ControlArea)) {
			report(i, "control_area", fmt.Sprintf("trades[%d]: control area %s is not in the active set", i, t.ControlArea))
		}
	}
	// Two trades with the same key would be summed by some readers and
	// taken as a correction by others; a set names each exchange once.
	type key struct {
		area         pipeline.ControlArea
		counterparty string
		direction    pipeline.Direction
	}
	first := make(map[key]int, len(set.Trades))
	for i, t := range set.Trades {
		k := key{t.ControlArea, t.Counterparty, t.Direction}
		if j, dup := first[k]; dup {
			report(i, "", fmt.Sprintf("trades[%d]: duplicate of trades[%d] (%s, %s, %s): a set has one trade per control area, counterparty and direction",
				i, j, t.ControlArea, t.Counterparty, t.Direction))
		} else {
			first[k] = i
		}
	}
}

// CanonicalTrades is the canonical encoding of a trade set without its
// portfolio, keys sorted as everywhere.
func CanonicalTrades(set *pipeline.TradeSet, bodyLen int) []byte {
	o := ingest.Object{Buf: append(ingest.CanonicalBuffer(bodyLen), '{')}
	o.Day("delivery_day", set.Day)
	ingest.WriteList(&o, "trades", set.Trades, func(o *ingest.Object, t *pipeline.Trade) {
		o.Str("control_area", string(t.ControlArea))
		o.Str("counterparty", t.Counterparty)
		o.Str("direction", string(t.Direction))
		o.Str("unit", string(t.Unit))
		o.Floats("values", t.Values)
	})
	return append(o.Buf, '}')
}

// QueryDay validates a day given as a query parameter the way body dates
// are validated, so that PUT /v1/process/trades?day=... answers a bad or
// missing day with the same 422 shape: an *ingest.SchemaError with loc
// ["query", name]. present tells whether the parameter was given at all.
func QueryDay(name, value string, present bool) (pipeline.Day, error) {
	if !present {
		return pipeline.Day{}, &ingest.SchemaError{Problems: []ingest.Problem{{
			Type: "missing", Loc: []string{"query", name}, Msg: "Field required", Input: nil, Ctx: map[string]any{},
		}}}
	}
	d, p := ingest.ParseDate(value)
	if p != nil {
		p.Loc = []string{"query", name}
		p.Input = value
		return pipeline.Day{}, &ingest.SchemaError{Problems: []ingest.Problem{*p}}
	}
	return d, nil
}
