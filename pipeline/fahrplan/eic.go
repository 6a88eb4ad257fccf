package fahrplan

import (
	"github.com/schedbridge/schedbridge/pipeline"
)

// ControlAreaEIC maps each control area to its EIC Y code, the value of
// InArea/OutArea in a schedule. These are defaults; deployments configure them.
var ControlAreaEIC = map[pipeline.ControlArea]string{
	pipeline.FiftyHertz: "10YDE-VE-------2",
	pipeline.Amprion:    "10YDE-RWENET---I",
	pipeline.TenneT:     "10YDE-EON------1",
	pipeline.TransnetBW: "10YDE-ENBW-----N",
}

// DefaultTSOParty maps each control area to the party EIC (X code) of its TSO,
// the receiver of a schedule. Amprion, TenneT and 50Hertz are the receivers and
// senders seen in the reference files. TransnetBW's code 10XDE-ENBW--TNGX is
// listed for "TransnetBW GmbH" in ENTSO-E's X_eicCodes list (as quoted in the
// krose/entsoeapi vignette and in the farao/OpenRAO TsoEICode table) and is the
// sender of an ESS acknowledgement in the schleupen test data; its check
// character is valid. These are defaults; deployments configure them.
var DefaultTSOParty = map[pipeline.ControlArea]string{
	pipeline.FiftyHertz: "10XDE-VE-TRANSMK",
	pipeline.Amprion:    "10XDE-RWENET---W",
	pipeline.TenneT:     "10XDE-EON-NETZ-C",
	pipeline.TransnetBW: "10XDE-ENBW--TNGX",
}

// EIC object types (the third character of a code) used in schedules.
const (
	EICParty byte = 'X' // market participants, in Germany also balancing groups
	EICArea  byte = 'Y' // areas such as control areas
)

// eicValue maps an EIC character to its value in the check-character
// algorithm of the ENTSO-E EIC reference manual: digits 0-9, letters 10-35 and
// the hyphen 36. It returns -1 for characters an EIC may not contain.
func eicValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c == '-':
		return 36
	}
	return -1
}

// eicCheckChar computes the check character for the first 15 characters of a
// code: the weighted sum (weights 16 down to 2) folded modulo 37. A result of
// '-' means no valid code can be built on those 15 characters.
func eicCheckChar(code string) byte {
	sum := 0
	for i := 0; i < 15; i++ {
		sum += eicValue(code[i]) * (16 - i)
	}
	v := 36 - (sum-1)%37
	switch {
	case v < 10:
		return byte('0' + v)
	case v < 36:
		return byte('A' + v - 10)
	}
	return '-'
}

// ValidateEIC checks that code is a well-formed EIC of the given object type
// ('X' for parties and balancing groups, 'Y' for areas; 0 accepts any type):
// 16 characters of 0-9, A-Z and '-', two leading digits, and a correct check
// character. The check character catches typos before a TSO rejects the file.
func ValidateEIC(code string, typ byte) error {
	if len(code) != 16 {
		return pipeline.Errorf(pipeline.Invalid, "EIC %q: want 16 characters", code)
	}
	for i := 0; i < 16; i++ {
		if eicValue(code[i]) < 0 {
			return pipeline.Errorf(pipeline.Invalid, "EIC %q: character %q not allowed", code, code[i])
		}
	}
	if code[0] < '0' || code[0] > '9' || code[1] < '0' || code[1] > '9' {
		return pipeline.Errorf(pipeline.Invalid, "EIC %q: want two digits for the issuing office", code)
	}
	if typ != 0 && code[2] != typ {
		return pipeline.Errorf(pipeline.Invalid, "EIC %q: want type %c", code, typ)
	}
	if want := eicCheckChar(code); want == '-' || code[15] != want {
		return pipeline.Errorf(pipeline.Invalid, "EIC %q: wrong check character", code)
	}
	return nil
}
