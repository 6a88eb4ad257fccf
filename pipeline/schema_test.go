package pipeline

import (
	"testing"
	"time"
)

func TestDate32(t *testing.T) {
	for _, s := range []string{"1970-01-01", "2026-03-29", "2026-10-25", "2026-11-24", "2024-02-29"} {
		d, _ := ParseDay(s)
		got := d.Date32().ToTime().Format(time.DateOnly)
		if got != s {
			t.Errorf("%s: Date32 round trip gives %s", s, got)
		}
	}
}

func TestQuarterStartsMicros(t *testing.T) {
	d := NewDay(2026, time.October, 25)
	qs := d.QuarterStartsMicros()
	if len(qs) != 100 {
		t.Fatalf("len = %d", len(qs))
	}
	if got := time.UnixMicro(qs[0]).UTC().Format(time.RFC3339); got != "2026-10-24T22:00:00Z" {
		t.Errorf("first = %s", got)
	}
	if got := time.UnixMicro(qs[99]).UTC().Format(time.RFC3339); got != "2026-10-25T22:45:00Z" {
		t.Errorf("last = %s", got)
	}
}
