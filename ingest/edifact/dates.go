package edifact

import (
	"fmt"
	"time"
)

// parseUNBTime reads UNB S004: YYMMDD (syntax version 3) or CCYYMMDD
// (version 4) and HHMM. The envelope carries no zone; the BDEW rules give
// times in UTC, so it is read as UTC.
func parseUNBTime(date, clock string) (time.Time, error) {
	var y, mo, d int
	var ok bool
	switch len(date) {
	case 6:
		y, mo, d, ok = yymmdd(date)
	case 8:
		y, mo, d, ok = ccyymmdd(date)
	}
	if !ok {
		return time.Time{}, fmt.Errorf("date %q is neither YYMMDD nor CCYYMMDD", date)
	}
	h, mi, ok := hhmm(clock)
	if !ok {
		return time.Time{}, fmt.Errorf("time %q is not HHMM", clock)
	}
	return civil(y, mo, d, h, mi, 0, 0)
}

// parseDTM reads a DTM value in the formats the market communication uses:
// 102 CCYYMMDD, 203 CCYYMMDDHHMM, 204 CCYYMMDDHHMMSS, 303/304 the same with a
// UTC offset (ZZZ: "+00", "+01", "-0100"; the "+" arrives released as "?+"
// and is already unescaped here), and the two-digit-year 101/201. The result
// is in UTC.
func parseDTM(v, format string) (time.Time, error) {
	var y, mo, d, h, mi, s, off int
	var ok bool
	switch format {
	case "102":
		if len(v) == 8 {
			y, mo, d, ok = ccyymmdd(v)
		}
	case "101":
		if len(v) == 6 {
			y, mo, d, ok = yymmdd(v)
		}
	case "201":
		if len(v) == 10 {
			y, mo, d, ok = yymmdd(v[:6])
			if ok {
				h, mi, ok = hhmm(v[6:])
			}
		}
	case "203":
		if len(v) == 12 {
			y, mo, d, h, mi, ok = ccyymmddhhmm(v)
		}
	case "204":
		if len(v) == 14 {
			y, mo, d, h, mi, ok = ccyymmddhhmm(v[:12])
			if ok {
				s, ok = num(v[12:14])
			}
		}
	case "303":
		if len(v) > 12 {
			y, mo, d, h, mi, ok = ccyymmddhhmm(v[:12])
			if ok {
				off, ok = zone(v[12:])
			}
		}
	case "304":
		if len(v) > 14 {
			y, mo, d, h, mi, ok = ccyymmddhhmm(v[:12])
			if ok {
				s, ok = num(v[12:14])
			}
			if ok {
				off, ok = zone(v[14:])
			}
		}
	default:
		return time.Time{}, fmt.Errorf("unsupported date format code %q", format)
	}
	if !ok {
		return time.Time{}, fmt.Errorf("value %q does not match format %s", v, format)
	}
	return civil(y, mo, d, h, mi, s, off)
}

// civil builds a UTC time from fields checked for range (time.Date would
// silently normalise 2026-13-40) and a UTC offset in minutes.
func civil(y, mo, d, h, mi, s, offMin int) (time.Time, error) {
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, fmt.Errorf("%04d-%02d-%02d %02d:%02d:%02d is no valid date and time", y, mo, d, h, mi, s)
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
	return t.Add(-time.Duration(offMin) * time.Minute), nil
}

func daysIn(y, mo int) int {
	return time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// zone reads ZZZ: a sign and two digits (hours) or four digits (hours and
// minutes); it returns minutes east of UTC.
func zone(z string) (int, bool) {
	if len(z) != 3 && len(z) != 5 {
		return 0, false
	}
	sign := 1
	switch z[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, false
	}
	h, ok := num(z[1:3])
	if !ok || h > 14 {
		return 0, false
	}
	m := 0
	if len(z) == 5 {
		if m, ok = num(z[3:5]); !ok || m > 59 {
			return 0, false
		}
	}
	return sign * (h*60 + m), true
}

func ccyymmddhhmm(v string) (y, mo, d, h, mi int, ok bool) {
	if y, mo, d, ok = ccyymmdd(v[:8]); !ok {
		return
	}
	h, mi, ok = hhmm(v[8:12])
	return
}

func ccyymmdd(v string) (y, mo, d int, ok bool) {
	if len(v) != 8 {
		return 0, 0, 0, false
	}
	y, ok1 := num(v[:4])
	mo, ok2 := num(v[4:6])
	d, ok3 := num(v[6:8])
	return y, mo, d, ok1 && ok2 && ok3
}

// yymmdd windows two-digit years: 00-69 are 20xx, 70-99 are 19xx.
func yymmdd(v string) (y, mo, d int, ok bool) {
	if len(v) != 6 {
		return 0, 0, 0, false
	}
	y, ok1 := num(v[:2])
	mo, ok2 := num(v[2:4])
	d, ok3 := num(v[4:6])
	if y < 70 {
		y += 2000
	} else {
		y += 1900
	}
	return y, mo, d, ok1 && ok2 && ok3
}

func hhmm(v string) (h, mi int, ok bool) {
	if len(v) != 4 {
		return 0, 0, false
	}
	h, ok1 := num(v[:2])
	mi, ok2 := num(v[2:4])
	return h, mi, ok1 && ok2
}

func num(s string) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
