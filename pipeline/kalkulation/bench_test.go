package kalkulation

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// BenchmarkCompute: a month of 31 days without a DST switch, four control
// areas, one portfolio: 31 x 96 x 4 = 11,904 rows, in the stage's order
// (sorted) and shuffled (the sort dominates then).
func BenchmarkCompute(b *testing.B) {
	von := pipeline.NewDay(2025, time.January, 1)
	rng := rand.New(rand.NewPCG(5, 6))
	sorted, p := randomCase(rng, von, 31)
	if len(sorted) != 11904 {
		b.Fatalf("%d rows", len(sorted))
	}
	slices.SortFunc(sorted, func(a, b Row) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.ControlArea), string(b.ControlArea)); c != 0 {
			return c
		}
		return a.QH - b.QH
	})
	shuffled := slices.Clone(sorted)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	bis := von.AddDays(30)
	for _, bc := range []struct {
		name string
		rows []Row
	}{{"sorted", sorted}, {"shuffled", shuffled}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compute(von, bis, bc.rows, p)
			}
		})
	}
}
