package mako

import (
	"cmp"
	"slices"
	"time"
)

// DuePrelistings lists the pre-listings for the re-send queue (Nachversand):
// for every registry partner, each send stream (partin_out,
// zuordnungsermaechtigung_out) whose state in the partner's overview row is
// fehlt, abgelehnt or unbeantwortet. rows are BuildOverview's rows by mp_id;
// a partner without a row is skipped, because nothing is known about it and a
// re-send would be a guess. NotedAt is now. The result is sorted by mp_id,
// then stream, and is never nil.
//
// Reasons: "PARTIN fehlt", "PARTIN abgelehnt am 2026-11-20" (Berlin day of
// the answer, else of the message), "PARTIN vom 2026-11-20 unbeantwortet",
// and the same with "Zuordnungsermächtigung"; a row without times (not
// built by BuildOverview) gets the reason without the date.
//
// Basis is "<state>" for a missing stream and "<state>:<interchange ref>"
// otherwise, e.g. "abgelehnt:SB20261120001": it stays the same while the
// stream keeps its state and newest message, so that a pre-listing an
// operator deleted is not noted again until one of them changes.
func DuePrelistings(partners []Partner, rows map[string]OverviewRow, now time.Time) []Vormerkung {
	out := []Vormerkung{}
	seen := make(map[string]bool, len(partners))
	for _, p := range partners {
		row, ok := rows[p.MPID]
		if !ok || seen[p.MPID] {
			continue
		}
		seen[p.MPID] = true
		for _, st := range SendStreams {
			c := streamCell(row, st)
			label := "PARTIN"
			if st == ZuordnungOut {
				label = "Zuordnungsermächtigung"
			}
			var reason string
			switch c.State {
			case StateMissing:
				reason = label + " fehlt"
			case StateRejected:
				reason = label + " abgelehnt"
				if c.AnsweredAt != nil || c.At != nil {
					reason += " am " + answerDay(c)
				}
			case StateOverdue:
				reason = label + " unbeantwortet"
				if c.At != nil {
					reason = label + " vom " + berlinDay(*c.At) + " unbeantwortet"
				}
			default:
				continue
			}
			out = append(out, Vormerkung{MPID: p.MPID, Stream: st, Reason: reason, NotedAt: now, Name: p.Name, Basis: basis(c)})
		}
	}
	slices.SortStableFunc(out, func(a, b Vormerkung) int {
		if c := cmp.Compare(a.MPID, b.MPID); c != 0 {
			return c
		}
		return cmp.Compare(a.Stream, b.Stream)
	})
	return out
}

// basis fingerprints the state of a stream cell for Vormerkung.Basis.
func basis(c StreamState) string {
	if c.Ref == "" {
		return string(c.State)
	}
	return string(c.State) + ":" + c.Ref
}
