package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	// The delivery calendar must not depend on the host's zoneinfo: a container
	// without /usr/share/zoneinfo would otherwise miscount DST days.
	_ "time/tzdata"
)

// Berlin is the time zone in which delivery days are defined.
var Berlin = mustLoad("Europe/Berlin")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("load time zone %s: %v", name, err))
	}
	return loc
}

// Day is a civil calendar day in Europe/Berlin, the unit of delivery.
// The zero value is not a valid day.
type Day struct {
	Year  int
	Month time.Month
	Dom   int
}

// NewDay returns the day; it does not normalise out-of-range values, use ParseDay
// for input.
func NewDay(year int, month time.Month, dom int) Day { return Day{year, month, dom} }

// DayOf returns the Berlin calendar day that contains t.
func DayOf(t time.Time) Day {
	y, m, d := t.In(Berlin).Date()
	return Day{y, m, d}
}

// ParseDay parses a strict YYYY-MM-DD day.
func ParseDay(s string) (Day, error) {
	if len(s) != 10 {
		return Day{}, Errorf(Invalid, "day %q: want YYYY-MM-DD", s)
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Day{}, dayError(s, err)
	}
	return Day{t.Year(), t.Month(), t.Day()}, nil
}

// String formats the day as YYYY-MM-DD.
func (d Day) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Dom) }

// IsZero reports whether d is the zero Day.
func (d Day) IsZero() bool { return d == Day{} }

// Start is local midnight of the day.
func (d Day) Start() time.Time { return time.Date(d.Year, d.Month, d.Dom, 0, 0, 0, 0, Berlin) }

// End is local midnight of the next day, the exclusive end of the delivery period.
func (d Day) End() time.Time { return d.AddDays(1).Start() }

// AddDays returns the day n calendar days later (earlier for negative n).
func (d Day) AddDays(n int) Day {
	t := time.Date(d.Year, d.Month, d.Dom+n, 12, 0, 0, 0, time.UTC)
	return Day{t.Year(), t.Month(), t.Day()}
}

// Before reports whether d is earlier than o.
func (d Day) Before(o Day) bool { return d.Compare(o) < 0 }

// Compare returns -1, 0 or +1.
func (d Day) Compare(o Day) int {
	switch {
	case d.Year != o.Year:
		return cmp(d.Year, o.Year)
	case d.Month != o.Month:
		return cmp(int(d.Month), int(o.Month))
	default:
		return cmp(d.Dom, o.Dom)
	}
}

func cmp(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Intervals is the number of quarter-hours of the delivery day: 96, or 92 on the
// spring-forward day and 100 on the fall-back day. It is computed from the zone
// rules rather than from "last Sunday" arithmetic so that it stays right if the
// rules ever change.
func (d Day) Intervals() int {
	return int(d.End().Sub(d.Start()) / (15 * time.Minute))
}

// MarshalText implements encoding.TextMarshaler.
func (d Day) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Day) UnmarshalText(b []byte) error {
	p, err := ParseDay(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// dayError says why s, of the form YYYY-MM-DD, is no day. It is apart from
// ParseDay so that the error's target is allocated only when there is an
// error: ParseDay reads every stored day.
func dayError(s string, err error) error {
	var pe *time.ParseError
	if errors.As(err, &pe) && strings.HasSuffix(pe.Message, "out of range") {
		// The form is right and the date does not exist, as 2026-02-30:
		// say so rather than ask for the form the caller used.
		y, _ := strconv.Atoi(s[:4])
		m, _ := strconv.Atoi(s[5:7])
		if m < 1 || m > 12 {
			return Errorf(Invalid, "day %q does not exist: there is no month %02d", s, m)
		}
		last := time.Date(y, time.Month(m)+1, 0, 12, 0, 0, 0, time.UTC).Day()
		return Errorf(Invalid, "day %q does not exist: %s %d has %d days", s, time.Month(m), y, last)
	}
	return Errorf(Invalid, "day %q: want YYYY-MM-DD", s)
}

// TSODeadline is when the schedules of the delivery day are due at the TSOs:
// 14:30 in Europe/Berlin on the day before, returned in UTC. It is a point in
// time, so that whoever shows it counts down from their own clock.
func (d Day) TSODeadline() time.Time {
	prev := d.AddDays(-1)
	return time.Date(prev.Year, prev.Month, prev.Dom, 14, 30, 0, 0, Berlin).UTC()
}
