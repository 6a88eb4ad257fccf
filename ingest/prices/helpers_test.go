package prices

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parsed runs a parser on data, fails the test on an error and checks
// the series with checkSeries.
func parsed(t *testing.T, parse func([]byte) (price.Series, error), data []byte) price.Series {
	t.Helper()
	s, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, s)
	return s
}

// checkSource checks the kind and the format a parser gave a series.
func checkSource(t *testing.T, s price.Series, kind price.Kind, format string) {
	t.Helper()
	if s.Kind != kind || s.Format != format {
		t.Errorf("kind %q format %q, want %q %q", s.Kind, s.Format, kind, format)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04Z07:00", s)
	if err != nil {
		panic(err)
	}
	return t
}

// problemsOf returns the problems of a schema error and fails on any other.
func problemsOf(t *testing.T, err error) []ingest.Problem {
	t.Helper()
	var se *ingest.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want *ingest.SchemaError, got %T %v", err, err)
	}
	if len(se.Problems) == 0 {
		t.Fatal("schema error without problems")
	}
	return se.Problems
}

// wantProblem is a problem that a test expects: its type, its loc, and a
// part of its message.
type wantProblem struct {
	typ string
	loc string // Loc joined by "|"
	msg string
}

func checkProblems(t *testing.T, err error, want ...wantProblem) {
	t.Helper()
	got := problemsOf(t, err)
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ || strings.Join(g.Loc, "|") != w.loc || !strings.Contains(g.Msg, w.msg) || g.Ctx == nil {
			t.Errorf("problem %d = {%s %q %q ctx=%v}, want {%s %q ...%q...}", i, g.Type, strings.Join(g.Loc, "|"), g.Msg, g.Ctx, w.typ, w.loc, w.msg)
		}
	}
}

// checkSeries asserts what every parsed series must satisfy: points in
// strictly ascending order, published lengths, missing intervals sorted and
// disjoint from the points.
func checkSeries(t testing.TB, s price.Series) {
	t.Helper()
	have := map[time.Time]bool{}
	for i, p := range s.Points {
		if p.Minutes != 15 && p.Minutes != 60 {
			t.Fatalf("point %d: minutes %d", i, p.Minutes)
		}
		if i > 0 && !p.Start.After(s.Points[i-1].Start) {
			t.Fatalf("point %d at %s is not after %s", i, p.Start, s.Points[i-1].Start)
		}
		if p.Start.Location() != time.UTC {
			t.Fatalf("point %d is not in UTC: %s", i, p.Start)
		}
		have[p.Start] = true
	}
	if !slices.IsSortedFunc(s.Missing, time.Time.Compare) {
		t.Fatalf("missing is not sorted: %v", s.Missing)
	}
	for i, m := range s.Missing {
		if have[m] || i > 0 && m.Equal(s.Missing[i-1]) {
			t.Fatalf("missing %s is also a point or listed twice", m)
		}
	}
}
