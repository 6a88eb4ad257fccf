package mako

import "time"

// StreamOf says which of the four streams a message belongs to, "" for none.
// Any PARTIN counts: ours go out as 37000 (supplier) or 37003 (BKV), the DSO's
// come in as 37001, and a partner that sends a different process id still
// sent its communication data. Of the UTILMD messages only the
// Zuordnungsermaechtigung (55071) is a stream; its deactivation (55072) and
// the series activations (55062/55063) are not.
func StreamOf(dir Direction, m Message) Stream {
	switch m.Type {
	case "CONTRL", "APERAK":
		if dir == In {
			return AckIn
		}
	case "PARTIN":
		if dir == Out {
			return PartinOut
		}
		return PartinIn
	case "UTILMD":
		if dir == Out && m.ProcessID == "55071" {
			return ZuordnungOut
		}
	}
	return ""
}

// Answer is an acknowledgment as it applies to one of our messages.
type Answer struct {
	Verdict Verdict
	At      time.Time
}

// Supersedes reports whether answer a replaces b as the answer of record of a
// message: a final verdict (accepted, rejected) beats a mere receipt; among
// equals the newer wins, and at the same instant a rejection wins, so that a
// rejection is never hidden.
func (a Answer) Supersedes(b Answer) bool {
	af, bf := a.Verdict == Accepted || a.Verdict == Rejected, b.Verdict == Accepted || b.Verdict == Rejected
	if b.Verdict == VerdictNone {
		return a.Verdict != VerdictNone
	}
	if af != bf {
		return af
	}
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.Verdict == Rejected && b.Verdict != Rejected
}
