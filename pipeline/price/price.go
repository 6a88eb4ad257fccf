// Package price holds market prices: the day-ahead spot price and the
// uniform imbalance price reBAP, both in EUR/MWh per quarter-hour. Hourly
// spot prices (deliveries before 1 October 2025) apply to each of their
// four quarter-hours.
package price

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Kind is a price series.
type Kind string

// Price kinds.
const (
	Spot  Kind = "spot"  // day-ahead auction, bidding zone DE-LU (SMARD filter 4169)
	ReBAP Kind = "rebap" // reBAP, the German uniform imbalance price (netztransparenz)
)

// Kinds lists the price kinds.
var Kinds = []Kind{Spot, ReBAP}

// ParseKind accepts spot or rebap.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", pipeline.Errorf(pipeline.Invalid, "price kind %q: want spot or rebap", s)
}

// Point is one published price. Start is the UTC start of its interval,
// Minutes the interval's length as published (15 or 60).
//
// Price is the spot price, or the reBAP that a balancing group pays when it
// is short (reBAP unterdeckt); PriceLong is the reBAP it is paid when it is
// long (reBAP ueberdeckt), equal to Price for spot prices and for exports
// with a single reBAP column. Prices may be negative.
type Point struct {
	Start     time.Time `json:"start"`
	Minutes   int       `json:"minutes"`
	Price     float64   `json:"price"`
	PriceLong float64   `json:"price_long"`
}

// Series is a parsed price file: the published points in time order and
// the starts of the intervals the file lists without a price (SMARD null,
// netztransparenz N.A. or N.E.), which are reported and never taken as zero.
type Series struct {
	Kind    Kind
	Format  string // "smard-json" or "netztransparenz-csv"
	Points  []Point
	Missing []time.Time
}

// QuarterHours splits the points into quarter-hour points: an hourly point
// becomes four with its price and Minutes kept at 60, so that a reader can
// tell an hourly price from a quarter-hourly one.
func QuarterHours(points []Point) []Point {
	out := make([]Point, 0, len(points))
	for _, p := range points {
		n := max(p.Minutes/15, 1)
		for i := range n {
			q := p
			q.Start = p.Start.Add(time.Duration(i) * 15 * time.Minute)
			out = append(out, q)
		}
	}
	return out
}

// ImportResult is what an import of a price file did.
type ImportResult struct {
	Kind   Kind           `json:"kind"`
	Format string         `json:"format"`
	Points int            `json:"points"`        // published points in the file
	Stored int            `json:"quarter_hours"` // quarter-hour prices written (new or changed)
	From   time.Time      `json:"from"`          // first interval start (UTC)
	To     time.Time      `json:"to"`            // end of the last interval (UTC)
	Days   []pipeline.Day `json:"delivery_days"`
	// Missing lists the intervals without a price (at most 100; MissingCount
	// has them all). An existing price is never overwritten by a missing one.
	Missing      []time.Time `json:"missing"`
	MissingCount int         `json:"missing_count"`
}
