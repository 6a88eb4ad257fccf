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

// Failures that no retry mends: the service's own records and its stores
// disagree, and they go on disagreeing until an operator acts. Their kind
// stays Internal (the API answers 500 and shows no detail); the runner does
// not retry a stage that met one, so that the operator learns of it at once
// instead of after the backoff.
var (
	// ErrMissingFile is a file that the service's records name (a lake
	// table's metadata, manifest list, manifest or data file) but that the
	// store does not have: a restore that missed files, or a store that is
	// not the one the records were written to.
	ErrMissingFile = errors.New("missing file")
	// ErrWarehouseMoved is a lake table whose catalog entry points outside
	// the configured warehouse: the data directory or bucket was moved or
	// restored elsewhere, and `schedbridge lake relocate` must point the
	// tables at the new place before the lake is used.
	ErrWarehouseMoved = errors.New("lake warehouse moved")
)

// Permanent reports whether err is one of the failures that no retry mends.
func Permanent(err error) bool {
	return errors.Is(err, ErrMissingFile) || errors.Is(err, ErrWarehouseMoved)
}
