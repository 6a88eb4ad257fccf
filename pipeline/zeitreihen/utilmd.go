package zeitreihen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// UTILMD process ids (Pruefidentifikatoren) of the activation and the
// deactivation of a series.
const (
	processActivation   = "55062"
	processDeactivation = "55063"
)

// familyLF is the CCI+15 code of the supplier sum series (LF-SZR); every
// other code, Z21 (BK-SZR) included, is taken as towards the BKV. The code
// values are unverified (see mako.SeriesInfo).
const familyLF = "Z20"

// FromInterchange returns the activation records of the UTILMD 55062/55063
// transactions of a received interchange, one per transaction, and one
// problem string per such transaction it cannot use, naming the message and
// the transaction (e.g. "message UM2, transaction TX2: no series type
// (CAV)"). A UTILMD message may bundle several transactions, and each is a
// request of its own: a broken one costs only itself.
//
// A transaction is an activation or a deactivation by its own RFF+Z13, else
// by its message's. The DSO is the message's NAD+MS, else the interchange's
// sender when that is a market-partner id. The reference is the
// transaction's IDE+24, else the message reference. The days are the Berlin
// delivery days of the instants: a series that starts at 2026-08-31T22:00Z
// starts on 2026-09-01. An activation runs from the day of DTM+158 to the
// day of DTM+159 (exclusive, open when absent); a deactivation takes effect
// on the day of DTM+159, or of DTM+158 when it names no end. A 55062/55063
// message without any series transaction is one problem of the message.
// Messages of other types, and transactions of other processes, are skipped
// without a word.
func FromInterchange(ic *mako.Interchange) ([]Activation, []string) {
	var out []Activation
	var problems []string
	for i := range ic.Messages {
		m := &ic.Messages[i]
		if m.Type != "UTILMD" {
			continue
		}
		if len(m.Series) == 0 {
			// The message says it is an activation or deactivation but
			// names nothing to (de)activate.
			if seriesProcess(m.ProcessID) {
				_, faults := fromTransaction(ic, m, &mako.SeriesInfo{})
				problems = append(problems, fmt.Sprintf("message %s: %s", m.Ref, strings.Join(faults, "; ")))
			}
			continue
		}
		for k := range m.Series {
			s := &m.Series[k]
			if !seriesProcess(processOf(m, s)) {
				continue
			}
			a, faults := fromTransaction(ic, m, s)
			if len(faults) > 0 {
				problems = append(problems, fmt.Sprintf("message %s, %s: %s", m.Ref, transactionName(s, k), strings.Join(faults, "; ")))
				continue
			}
			out = append(out, a)
		}
	}
	return out, problems
}

// processOf is the process id of a transaction: its own RFF+Z13, else the
// message's.
func processOf(m *mako.Message, s *mako.SeriesInfo) string {
	if s.ProcessID != "" {
		return s.ProcessID
	}
	return m.ProcessID
}

// seriesProcess reports whether a process id is the activation or the
// deactivation of a series.
func seriesProcess(id string) bool { return id == processActivation || id == processDeactivation }

// transactionName names a transaction in a problem: by its IDE+24, else by
// its position in the message (from 1), so that the operator can still
// find it.
func transactionName(s *mako.SeriesInfo, k int) string {
	if s.Transaction != "" {
		return "transaction " + s.Transaction
	}
	return fmt.Sprintf("transaction #%d", k+1)
}

// fromTransaction reads one 55062/55063 transaction of message m; faults
// lists everything that keeps it from being a record.
func fromTransaction(ic *mako.Interchange, m *mako.Message, s *mako.SeriesInfo) (Activation, []string) {
	var faults []string
	a := Activation{Referenz: m.Ref}
	if i := slices.IndexFunc(m.Parties, func(p mako.Party) bool { return p.Qualifier == "MS" }); i >= 0 {
		a.NetzbetreiberMPID = m.Parties[i].ID
		if !mako.ValidMPID(a.NetzbetreiberMPID) {
			faults = append(faults, fmt.Sprintf("sender %q (NAD+MS) is no 13-digit market-partner id", a.NetzbetreiberMPID))
		}
	} else if mako.ValidMPID(ic.Sender) {
		a.NetzbetreiberMPID = ic.Sender
	} else {
		faults = append(faults, "no DSO: no NAD+MS and the interchange sender is no 13-digit market-partner id")
	}
	if s.Transaction != "" {
		a.Referenz = s.Transaction
	}
	a.Marktrolle = RoleBKV
	if s.Family == familyLF {
		a.Marktrolle = RoleLF
	}
	a.Bilanzierungsgebiet, a.Bilanzkreis = s.Area, s.Group
	switch {
	case s.Area == "":
		faults = append(faults, "no balancing area (CCI+Z20)")
	case !eicOfType(s.Area, 'Y'):
		faults = append(faults, fmt.Sprintf("balancing area %q (CCI+Z20) is no EIC of type Y", s.Area))
	}
	switch {
	case s.Group == "":
		faults = append(faults, "no balancing group (CCI+Z19)")
	case !eicOfType(s.Group, 'X'):
		faults = append(faults, fmt.Sprintf("balancing group %q (CCI+Z19) is no EIC of type X", s.Group))
	}
	a.Zeitreihentyp = SeriesType(s.Type)
	switch {
	case s.Type == "":
		faults = append(faults, "no series type (CAV)")
	case !slices.Contains(SeriesTypes, a.Zeitreihentyp):
		faults = append(faults, fmt.Sprintf("unknown series type %q (CAV)", s.Type))
	}
	if processOf(m, s) == processActivation {
		a.Aktion = Aktivierung
		if s.Start.IsZero() {
			faults = append(faults, "no start of the activation (DTM+158)")
		} else {
			a.GueltigAb = pipeline.DayOf(s.Start)
		}
		if !s.End.IsZero() {
			bis := pipeline.DayOf(s.End)
			if !a.GueltigAb.IsZero() && !a.GueltigAb.Before(bis) {
				faults = append(faults, fmt.Sprintf("end %s (DTM+159) is not after start %s (DTM+158)", bis, a.GueltigAb))
			}
			a.GueltigBis = &bis
		}
	} else {
		a.Aktion = Deaktivierung
		switch {
		case !s.End.IsZero():
			a.GueltigAb = pipeline.DayOf(s.End)
		case !s.Start.IsZero():
			a.GueltigAb = pipeline.DayOf(s.Start)
		default:
			faults = append(faults, "no date of the deactivation (DTM+159 or DTM+158)")
		}
	}
	return a, faults
}

// eicOfType reports whether s is an EIC of the type letter: X for a
// balancing group, Y for a balancing area.
func eicOfType(s string, typ byte) bool { return pipeline.ValidEIC(s) && s[2] == typ }
