package pipeline

import "unicode/utf8"

// MaxQuoted is how many bytes of a value sent by a client a message quotes
// at most. Refusals quote what they refuse (an issuer, a key id, a header),
// and both the answer and the audit trail keep the message: without a cap a
// request could make either as large as its headers.
const MaxQuoted = 200

// Clip returns s, or its first MaxQuoted bytes (never half a character)
// followed by an ellipsis, for quoting a client's value in a message.
func Clip(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
