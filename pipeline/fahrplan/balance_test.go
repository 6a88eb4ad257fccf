package fahrplan

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestBalance(t *testing.T) {
	day := pipeline.NewDay(2026, 3, 29) // 92 quarter-hours
	n := day.Intervals()
	fill := func(v float64) []float64 {
		q := make([]float64, n)
		for i := range q {
			q[i] = v
		}
		return q
	}
	const bg, ex, cp = "11XSBTEST-BKV--A", "11XSBEXCHANGE--G", "11XSBCPTY-A----I"
	m := Message{Day: day, Sender: bg, Series: []Series{
		{InParty: bg, OutParty: ex, Quantities: fill(2)},   // bought from the exchange
		{InParty: bg, OutParty: cp, Quantities: fill(0.5)}, // bought from a counterparty
		{InParty: cp, OutParty: bg, Quantities: fill(1.25)},
		{InParty: cp, OutParty: ex, Quantities: fill(9)}, // not ours
	}}
	bought, sold := m.Balance(bg)
	if len(bought) != n || len(sold) != n {
		t.Fatalf("lengths %d/%d, want %d", len(bought), len(sold), n)
	}
	for i := range n {
		if bought[i] != 2.5 || sold[i] != 1.25 {
			t.Fatalf("qh %d: bought %v sold %v, want 2.5 and 1.25", i, bought[i], sold[i])
		}
	}
}
