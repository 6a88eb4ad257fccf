package pipeline

import (
	"context"
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
	// TooSlow is a request whose caller did not send all of it within the
	// server's read timeout.
	TooSlow ErrorKind = "too_slow"
	// Canceled is a request whose caller went away before the answer: the
	// failure is the caller's doing, and nobody is left to read the answer.
	Canceled ErrorKind = "canceled"
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

// Attribute returns err as it should be reported to the caller whose context
// is ctx. When ctx is done and err is the cancellation that followed (the
// caller closed its connection, so the server cancelled the work done for
// it), the failure is a Canceled one whatever the layer that met it called
// it: it is the caller's, not the server's. Every other error is returned as
// it is, a deadline of the server's own included.
func Attribute(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return &Error{Kind: Canceled, Message: "client closed request", Err: err}
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
