package ingest

import (
	"fmt"
	"strings"

	"github.com/schedbridge/schedbridge/pipeline"
)

// MaxProblems and maxMessages bound the size of a 422 body: a body of 10,000
// broken entries must not answer with a response larger than itself.
const (
	MaxProblems = 1000
	maxMessages = 1000
)

// Problem is one schema-level failure, rendered by the API as an element of
// {"detail": [...]}. Its fields are those of a pydantic v2 error as FastAPI
// returns it.
type Problem struct {
	Type  string         `json:"type"`
	Loc   []string       `json:"loc"` // e.g. ["body","series","0","malo"]; indices as decimal strings
	Msg   string         `json:"msg"`
	Input any            `json:"input"` // the offending input value as decoded JSON (nil -> null)
	Ctx   map[string]any `json:"ctx"`   // never nil: {} when empty
}

// SchemaError is a body that does not fit the model: answered with 422
// {"detail": Problems}. It lists every failure, at most MaxProblems of them.
type SchemaError struct{ Problems []Problem }

// Error summarises the first problem; the API renders Problems instead.
func (e *SchemaError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid request body"
	}
	p := e.Problems[0]
	s := fmt.Sprintf("invalid request body: %s: %s", strings.Join(p.Loc, "."), p.Msg)
	if n := len(e.Problems) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

// Kind classifies the error for the API's status table.
func (e *SchemaError) Kind() pipeline.ErrorKind { return pipeline.Invalid }

// BusinessError is a well-formed body that breaks a rule of the domain:
// answered with 422 {"detail": Messages[0], "errors": Messages,
// "error_count": Total}. Messages holds at most maxMessages entries; Total
// counts all of them.
type BusinessError struct {
	Messages []string
	Total    int
}

// Error is the first message, as the contract's detail string.
func (e *BusinessError) Error() string {
	if len(e.Messages) == 0 {
		return "invalid submission"
	}
	if e.Total > 1 {
		return fmt.Sprintf("%s (and %d more)", e.Messages[0], e.Total-1)
	}
	return e.Messages[0]
}

// Kind classifies the error for the API's status table.
func (e *BusinessError) Kind() pipeline.ErrorKind { return pipeline.Invalid }

// Findings collects business-rule messages in the order the rules are checked.
type Findings struct {
	msgs  []string
	total int
}

// Addf records a broken rule; beyond the cap it is only counted.
func (f *Findings) Addf(format string, args ...any) {
	f.total++
	if len(f.msgs) < maxMessages {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
}

// Err returns nil when no rule was broken, so that callers can return it as is.
func (f *Findings) Err() error {
	if f.total == 0 {
		return nil
	}
	return &BusinessError{Messages: f.msgs, Total: f.total}
}
