package pipeline

import "unicode/utf8"

// MaxQuoted is how many bytes of a value sent by a client a message quotes
// at most. Refusals quote what they refuse (an issuer, a key id, a header),
// and both the answer and the audit trail keep the message: without a cap a
// request could make either as large as its headers.
const MaxQuoted = 200

// Clip returns s, or its first MaxQuoted bytes (never half a character)
// followed by an ellipsis, for quoting a client's value in a message.
func Clip(s string) string { return ClipTo(s, MaxQuoted) }

// ClipTo returns s, or its first n bytes (never half a character) followed
// by an ellipsis. Every value that a client chooses and that is quoted in a
// message or written to a log passes through here, so that one request
// cannot make an answer, an audit row or a log line as large as itself.
func ClipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
