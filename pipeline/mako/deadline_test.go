package mako

import (
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

func TestAnswerDeadline(t *testing.T) {
	// Each expectation is 12:00 Berlin of the day worked out by hand from the
	// weekday and the holiday list, written in UTC: +01:00 in winter (11:00Z),
	// +02:00 in summer (10:00Z).
	tests := []struct {
		name string
		sent string
		want string
	}{
		{"Monday to Tuesday", "2026-11-16T09:00:00Z", "2026-11-17T11:00:00Z"},
		{"Buss- und Bettag (SN only) counts everywhere", "2026-11-17T08:00:00Z", "2026-11-19T11:00:00Z"},
		{"Friday to Monday", "2026-11-20T14:00:00Z", "2026-11-23T11:00:00Z"},
		{"Saturday to Monday", "2026-11-21T10:00:00Z", "2026-11-23T11:00:00Z"},
		{"Sunday 23:30 UTC is Monday in Berlin", "2026-11-22T23:30:00Z", "2026-11-24T11:00:00Z"},
		{"Sunday 23:59 Berlin is still Sunday", "2026-11-22T22:59:00Z", "2026-11-23T11:00:00Z"},
		{"Monday 23:30 UTC is Tuesday, then Buss- und Bettag", "2026-11-16T23:30:00Z", "2026-11-19T11:00:00Z"},
		{"offset of the input does not matter", "2026-11-20T15:00:00+01:00", "2026-11-23T11:00:00Z"},
		{"Gruendonnerstag to Tuesday after Easter", "2026-04-02T08:00:00Z", "2026-04-07T10:00:00Z"},
		{"23.12. skips 24.12., both Christmas days and the weekend", "2026-12-23T09:00:00Z", "2026-12-28T11:00:00Z"},
		{"24.12. itself", "2025-12-24T09:00:00Z", "2025-12-29T11:00:00Z"},
		{"30.12. skips 31.12., Neujahr and the weekend", "2026-12-30T09:00:00Z", "2027-01-04T11:00:00Z"},
		{"Heilige Drei Koenige (BW, BY, ST)", "2027-01-05T09:00:00Z", "2027-01-07T11:00:00Z"},
		{"Frauentag (BE, MV) on a Monday", "2027-03-05T09:00:00Z", "2027-03-09T11:00:00Z"},
		{"Fronleichnam (BW, BY, HE, NW, RP, SL)", "2026-06-03T09:00:00Z", "2026-06-05T10:00:00Z"},
		{"Reformationstag on a Friday", "2025-10-30T09:00:00Z", "2025-11-03T11:00:00Z"},
		{"Tag der Befreiung 2025 (BE, one-off)", "2025-05-07T09:00:00Z", "2025-05-09T10:00:00Z"},
		{"Mariae Himmelfahrt (SL) on a Friday", "2025-08-14T09:00:00Z", "2025-08-18T10:00:00Z"},
		{"Weltkindertag (TH) on a Monday", "2027-09-17T09:00:00Z", "2027-09-21T10:00:00Z"},
		{"weekend of the spring DST change", "2026-03-27T15:00:00Z", "2026-03-30T10:00:00Z"},
		{"weekend of the autumn DST change", "2026-10-23T15:00:00Z", "2026-10-26T11:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AnswerDeadline(mustTime(t, tt.sent))
			if want := mustTime(t, tt.want); !got.Equal(want) {
				t.Errorf("AnswerDeadline(%s) = %s, want %s", tt.sent, got.UTC().Format(time.RFC3339), tt.want)
			}
			if h, m, s := got.In(pipeline.Berlin).Clock(); h != 12 || m != 0 || s != 0 {
				t.Errorf("AnswerDeadline(%s) is %02d:%02d:%02d in Berlin, want 12:00:00", tt.sent, h, m, s)
			}
		})
	}
}

func TestIsWorkingDay(t *testing.T) {
	tests := []struct {
		day  string
		want bool
	}{
		{"2026-11-18", false}, // Buss- und Bettag, Saxony only
		{"2026-11-19", true},
		{"2026-12-24", false},
		{"2026-12-31", false},
		{"2026-11-21", false}, // Saturday
		{"2026-11-22", false}, // Sunday
		{"2026-10-30", true},  // Friday before Reformationstag 2026 (a Saturday)
		{"2026-11-02", true},  // Monday after Allerheiligen (a Sunday)
	}
	for _, tt := range tests {
		d, err := pipeline.ParseDay(tt.day)
		if err != nil {
			t.Fatal(err)
		}
		if got := isWorkingDay(d); got != tt.want {
			t.Errorf("isWorkingDay(%s) = %v, want %v", tt.day, got, tt.want)
		}
	}
}
