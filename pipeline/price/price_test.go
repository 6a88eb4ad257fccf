package price

import (
	"testing"
	"time"
)

func TestQuarterHours(t *testing.T) {
	t0 := time.Date(2025, 3, 29, 23, 0, 0, 0, time.UTC)
	q := func(i int) time.Time { return t0.Add(time.Duration(i) * 15 * time.Minute) }
	points := []Point{
		{Start: q(0), Minutes: 60, Price: 92.15, PriceLong: 92.15},
		{Start: q(4), Minutes: 15, Price: -5, PriceLong: 7},
		{Start: q(5), Minutes: 0, Price: 1, PriceLong: 1}, // no length: kept as one point
	}
	got := QuarterHours(points)
	want := []Point{
		{Start: q(0), Minutes: 60, Price: 92.15, PriceLong: 92.15},
		{Start: q(1), Minutes: 60, Price: 92.15, PriceLong: 92.15},
		{Start: q(2), Minutes: 60, Price: 92.15, PriceLong: 92.15},
		{Start: q(3), Minutes: 60, Price: 92.15, PriceLong: 92.15},
		{Start: q(4), Minutes: 15, Price: -5, PriceLong: 7},
		{Start: q(5), Minutes: 0, Price: 1, PriceLong: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !got[i].Start.Equal(want[i].Start) || got[i].Minutes != want[i].Minutes || got[i].Price != want[i].Price || got[i].PriceLong != want[i].PriceLong {
			t.Errorf("point %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if points[0].Start != t0 || len(points) != 3 {
		t.Error("the input was changed")
	}
	if got := QuarterHours(nil); got == nil || len(got) != 0 {
		t.Errorf("QuarterHours(nil) = %#v, want an empty slice", got)
	}
}

// A spring-forward day of hourly prices has 23 points and 92 quarter-hours.
func TestQuarterHoursSpringForward(t *testing.T) {
	start := time.Date(2025, 3, 29, 23, 0, 0, 0, time.UTC)
	var points []Point
	for i := range 23 {
		points = append(points, Point{Start: start.Add(time.Duration(i) * time.Hour), Minutes: 60, Price: float64(i)})
	}
	got := QuarterHours(points)
	if len(got) != 92 {
		t.Fatalf("%d quarter-hours, want 92", len(got))
	}
	for i, p := range got {
		if !p.Start.Equal(start.Add(time.Duration(i)*15*time.Minute)) || p.Price != float64(i/4) {
			t.Fatalf("quarter %d = %+v", i, p)
		}
	}
}
