package pipeline

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an error for callers: the API maps each kind to one HTTP
// status in a single table, the CLI to an exit message.
type ErrorKind string

// The error vocabulary of schedbridge.
const (
	Invalid      ErrorKind = "invalid"
	NotFound     ErrorKind = "not_found"
	Conflict     ErrorKind = "conflict"
	Forbidden    ErrorKind = "forbidden"
	Unauthorized ErrorKind = "unauthorized"
	TooLarge     ErrorKind = "too_large"
	RateLimited  ErrorKind = "rate_limited"
	Unavailable  ErrorKind = "unavailable"
	Internal     ErrorKind = "internal"
)

// Error is an error with a kind and a message that is safe to show to the caller.
type Error struct {
	Kind    ErrorKind
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error of the given kind.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of the first *Error in err's chain, or of the first
// error that has a Kind method, Internal otherwise.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	// Errors of adapters that carry their own detail (ingest's schema and
	// business errors) say their kind through a method.
	var k interface{ Kind() ErrorKind }
	if errors.As(err, &k) {
		return k.Kind()
	}
	return Internal
}

// MessageOf returns the caller-safe message of the first *Error in err's chain.
// Internal errors get a generic text so that no driver detail leaks to clients.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
