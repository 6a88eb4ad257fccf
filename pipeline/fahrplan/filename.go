package fahrplan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Answer kinds as they appear in file names and in Answer.Kind.
const (
	KindACK = "ACK"
	KindANO = "ANO"
	KindCNF = "CNF"
)

// crq marks a status request that asks for a confirmation report
// (YYYYMMDD_SRQ_<sender>_<receiver>_CRQ.XML). It is not an answer.
const crq = "CRQ"

// layoutFileTime is the answer timestamp in file names: colons are not allowed
// in file names, so hyphens replace them.
const layoutFileTime = "2006-01-02T15-04-05Z"

// FileName is a parsed schedule-exchange file name:
//
//	YYYYMMDD_<Kind>_<Sender>_<Receiver>[_<VVV>][_<ACK|ANO|CNF>_<yyyy-MM-ddTHH-mm-ssZ>|_CRQ].XML
//
// Sender is the balancing group and Receiver the TSO in every name of one
// exchange, including the TSO's answers.
type FileName struct {
	Day        pipeline.Day // the delivery day
	Kind       string       // TPS (balancing group schedule), PPS (production schedule), SRQ (status request), ...
	Sender     string
	Receiver   string
	Version    int       // the schedule's version, 0 when the name has none (status requests)
	Answer     string    // "" for the schedule itself; ACK, ANO or CNF for an answer; CRQ for a status request asking for a CNF
	AnswerTime time.Time // creation time of an ACK, ANO or CNF
}

// IsAnswer reports whether the name is that of a TSO answer.
func (f FileName) IsAnswer() bool {
	return f.Answer == KindACK || f.Answer == KindANO || f.Answer == KindCNF
}

// String formats the name with the upper-case .XML extension.
func (f FileName) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%04d%02d%02d_%s_%s_%s", f.Day.Year, int(f.Day.Month), f.Day.Dom, f.Kind, f.Sender, f.Receiver)
	if f.Version > 0 {
		fmt.Fprintf(&b, "_%03d", f.Version)
	}
	if f.Answer != "" {
		b.WriteString("_" + f.Answer)
		if f.IsAnswer() {
			b.WriteString("_" + f.AnswerTime.UTC().Format(layoutFileTime))
		}
	}
	b.WriteString(".XML")
	return b.String()
}

// ParseFileName parses a schedule-exchange file name (without directory); the
// .xml extension is matched case-insensitively.
func ParseFileName(name string) (FileName, error) {
	bad := func(format string, args ...any) (FileName, error) {
		return FileName{}, pipeline.Errorf(pipeline.Invalid, "file name %q: "+format, append([]any{name}, args...)...)
	}
	if strings.ContainsAny(name, `/\`) {
		return bad("want a name without directory")
	}
	if len(name) < 4 || !strings.EqualFold(name[len(name)-4:], ".xml") {
		return bad("want the extension .XML")
	}
	parts := strings.Split(name[:len(name)-4], "_")
	if len(parts) < 4 {
		return bad("want YYYYMMDD_<kind>_<sender>_<receiver>...")
	}
	var f FileName
	if len(parts[0]) != 8 || !allDigits(parts[0]) {
		return bad("date %q: want YYYYMMDD", parts[0])
	}
	t, err := time.Parse("20060102", parts[0])
	if err != nil {
		return bad("date %q: want YYYYMMDD", parts[0])
	}
	f.Day = pipeline.NewDay(t.Year(), t.Month(), t.Day())
	if !isUpperWord(parts[1]) {
		return bad("kind %q: want three capital letters such as TPS", parts[1])
	}
	f.Kind, f.Sender, f.Receiver = parts[1], parts[2], parts[3]
	if f.Sender == "" || f.Receiver == "" {
		return bad("sender and receiver must not be empty")
	}
	rest := parts[4:]
	if len(rest) > 0 && len(rest[0]) == 3 && allDigits(rest[0]) {
		f.Version, _ = strconv.Atoi(rest[0])
		if f.Version < 1 {
			return bad("version %q: want 001..999", rest[0])
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		f.Answer = rest[0]
		rest = rest[1:]
		switch f.Answer {
		case KindACK, KindANO, KindCNF:
			if len(rest) == 0 {
				return bad("%s without its timestamp", f.Answer)
			}
			if f.AnswerTime, err = time.Parse(layoutFileTime, rest[0]); err != nil {
				return bad("timestamp %q: want yyyy-MM-ddTHH-mm-ssZ", rest[0])
			}
			rest = rest[1:]
		case crq:
		default:
			return bad("unexpected part %q: want ACK, ANO, CNF or CRQ", f.Answer)
		}
	}
	if len(rest) > 0 {
		return bad("unexpected trailing part %q", strings.Join(rest, "_"))
	}
	return f, nil
}

func isUpperWord(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
