package portal

import (
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func day(t *testing.T, s string) pipeline.Day {
	t.Helper()
	d, err := pipeline.ParseDay(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWorkingDays(t *testing.T) {
	for _, c := range []struct {
		from, to, state string
		want            int
	}{
		{"2026-11-23", "2026-11-27", "BE", 5},  // Monday to Friday
		{"2026-11-28", "2026-11-29", "BE", 0},  // a weekend
		{"2026-12-21", "2027-01-08", "BE", 13}, // 25.12. and 1.1. on weekdays, 26.12. a Saturday
		{"2027-01-06", "2027-01-06", "BY", 0},  // Heilige Drei Koenige in Bavaria
		{"2027-01-06", "2027-01-06", "BE", 1},  // not in Berlin
		{"2027-03-08", "2027-03-08", "BE", 0},  // Frauentag, Berlin only
		{"2027-03-08", "2027-03-08", "", 1},    // national holidays only
		{"2026-10-31", "2026-11-02", "", 1},    // Saturday Reformationstag, Sunday, Monday
	} {
		if got := WorkingDays(day(t, c.from), day(t, c.to), c.state); got != c.want {
			t.Errorf("WorkingDays(%s, %s, %q) = %d, want %d", c.from, c.to, c.state, got, c.want)
		}
	}
}

func TestOverlapsAndRange(t *testing.T) {
	for _, c := range []struct {
		a1, a2, b1, b2 string
		want           bool
	}{
		{"2027-01-04", "2027-01-08", "2027-01-08", "2027-01-12", true}, // shared last day
		{"2027-01-04", "2027-01-08", "2027-01-09", "2027-01-12", false},
		{"2027-01-04", "2027-01-08", "2027-01-05", "2027-01-05", true}, // inside
		{"2027-01-05", "2027-01-05", "2027-01-04", "2027-01-08", true},
		{"2027-01-10", "2027-01-12", "2027-01-04", "2027-01-09", false},
	} {
		if got := Overlaps(day(t, c.a1), day(t, c.a2), day(t, c.b1), day(t, c.b2)); got != c.want {
			t.Errorf("Overlaps(%s..%s, %s..%s) = %v", c.a1, c.a2, c.b1, c.b2, got)
		}
	}
	if err := CheckRange(day(t, "2027-01-05"), day(t, "2027-01-04")); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("end before start: %v", err)
	}
	if err := CheckRange(day(t, "2027-01-01"), day(t, "2028-01-01")); err != nil { // 366 days
		t.Errorf("366 days: %v", err)
	}
	if err := CheckRange(day(t, "2027-01-01"), day(t, "2028-01-02")); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("367 days: %v", err)
	}
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"Anna.Schmidt@Firma.DE": "anna.schmidt@firma.de", " a@b.de ": "a@b.de",
		"Anna <a@b.de>": "", "not-an-address": "", "a@b.de\r\nBcc: x@y.de": "", "": "",
	} {
		got, err := NormalizeEmail(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFormatCentsAndEnum(t *testing.T) {
	for c, want := range map[int64]string{0: "0.00", 5: "0.05", 520000: "5200.00", -1234: "-12.34", 100: "1.00"} {
		if got := FormatCents(c); got != want {
			t.Errorf("FormatCents(%d) = %q, want %q", c, got, want)
		}
	}
	if v, err := ParseEnum("type", "zwischenzeugnis", CertificateTypes); err != nil || v != Zwischenzeugnis {
		t.Errorf("ParseEnum: %v %v", v, err)
	}
	if _, err := ParseEnum("type", "Zwischenzeugnis", CertificateTypes); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("ParseEnum is case-sensitive: %v", err)
	}
}

func TestView(t *testing.T) {
	comps := []Component{
		{Name: "Grundgehalt", AmountCents: 520000, Interval: Monthly, Visibility: Visible},
		{Name: "Zulage", AmountCents: 15000, Interval: Monthly, Visibility: Visible},
		{Name: "Bonus", AmountCents: 640000, Interval: Yearly, Visibility: Visible},
		{Name: "Einmalzahlung", AmountCents: 100000, Interval: Once, Visibility: Visible},
	}
	v := View(comps, MethodSSO)
	if v.Masked || *v.MonthlyTotal != 535000 || *v.YearlyTotal != 12*535000+640000+100000 || *v.Components[2].Amount != 640000 {
		t.Errorf("all visible: %+v", v)
	}
	masked := append([]Component(nil), comps...)
	masked[2].Visibility = Masked
	v = View(masked, MethodSSO)
	if !v.Masked || v.MaskReason != ReasonDerived || v.MonthlyTotal != nil || v.YearlyTotal != nil ||
		v.Components[2].Amount != nil || v.Components[2].MaskReason != ReasonHR || *v.Components[0].Amount != 520000 {
		t.Errorf("one masked by HR: %+v", v)
	}
	v = View(comps, MethodMagicLink)
	for _, c := range v.Components {
		if c.Amount != nil || !c.Masked || c.MaskReason != ReasonMagicLink {
			t.Errorf("magic link shows %+v", c)
		}
	}
	if !v.Masked || v.MaskReason != ReasonMagicLink || v.MonthlyTotal != nil {
		t.Errorf("magic link totals %+v", v)
	}
	// An unknown visibility is masked: only sichtbar shows.
	v = View([]Component{{Name: "x", AmountCents: 1, Interval: Monthly, Visibility: ""}}, MethodSSO)
	if v.Components[0].Amount != nil {
		t.Error("empty visibility shown")
	}
	if v := View(nil, MethodSSO); v.Masked || *v.MonthlyTotal != 0 {
		t.Errorf("no components: %+v", v)
	}
}

func TestSessionAlive(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	s := Session{CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(12 * time.Hour)}
	for _, c := range []struct {
		at   time.Duration
		seen time.Duration
		want bool
	}{
		{29 * time.Minute, 0, true}, {30 * time.Minute, 0, false},
		{11*time.Hour + 59*time.Minute, 11*time.Hour + 45*time.Minute, true}, {12 * time.Hour, 11*time.Hour + 59*time.Minute, false},
	} {
		s.LastSeenAt = t0.Add(c.seen)
		if got := s.Alive(t0.Add(c.at), 30*time.Minute); got != c.want {
			t.Errorf("Alive at +%s (seen +%s) = %v", c.at, c.seen, got)
		}
	}
}
