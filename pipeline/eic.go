package pipeline

// EIC object types (the third character of a code).
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

// EICCheckChar computes the check character for the first 15 characters of
// code: the weighted sum (weights 16 down to 2) folded modulo 37. It reports
// false when code is shorter than 15 characters, holds a character an EIC may
// not contain, or the result is '-', which means that no valid code can be
// built on those 15 characters.
func EICCheckChar(code string) (byte, bool) {
	if len(code) < 15 {
		return 0, false
	}
	sum := 0
	for i := 0; i < 15; i++ {
		v := eicValue(code[i])
		if v < 0 {
			return 0, false
		}
		sum += v * (16 - i)
	}
	v := 36 - (sum-1)%37
	switch {
	case v < 10:
		return byte('0' + v), true
	case v < 36:
		return byte('A' + v - 10), true
	}
	return '-', false
}

// ValidateEIC checks that code is a well-formed EIC of the given object type
// (EICParty for parties and balancing groups, EICArea for areas; 0 accepts any
// type): 16 characters of 0-9, A-Z and '-', two leading digits, and a correct
// check character. The check character catches typos before a TSO rejects the
// file, so every place that accepts an EIC for a schedule uses this check.
// Errors are Invalid and name the expected check character.
func ValidateEIC(code string, typ byte) error {
	if len(code) != 16 {
		return Errorf(Invalid, "EIC %q: want 16 characters", code)
	}
	for i := 0; i < 16; i++ {
		if eicValue(code[i]) < 0 {
			return Errorf(Invalid, "EIC %q: character %q not allowed (want 0-9, A-Z or '-')", code, code[i])
		}
	}
	if code[0] < '0' || code[0] > '9' || code[1] < '0' || code[1] > '9' {
		return Errorf(Invalid, "EIC %q: want two digits for the issuing office", code)
	}
	if typ != 0 && code[2] != typ {
		return Errorf(Invalid, "EIC %q: want type %c as the third character", code, typ)
	}
	want, ok := EICCheckChar(code)
	if !ok {
		return Errorf(Invalid, "EIC %q: no check character is valid for %q, so no such EIC exists", code, code[:15])
	}
	if code[15] != want {
		return Errorf(Invalid, "EIC %q: wrong check character %q, want %q (%s%c)", code, code[15], want, code[:15], want)
	}
	return nil
}
