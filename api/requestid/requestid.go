// Package requestid names every HTTP request: the id a client sends in
// X-Request-ID when it is sane, a fresh random one otherwise. The API puts it
// into the request's context, answers it in the same header and stores it with
// the request's audit entry; Handler writes it into every log line logged with
// that context, whichever package logs it, so that one request's lines can be
// found together and matched with what the client saw.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

// Header is the request and response header that carries the id.
const Header = "X-Request-ID"

// Key is the attribute name of the id in log lines.
const Key = "request_id"

// MaxLen is the longest id taken from a client. A longer one, or one with
// other characters than Sane allows, is replaced, so that a client cannot
// fill the logs or the audit trail with arbitrary text.
const MaxLen = 128

// Sane reports whether a client's id is kept: 1 to MaxLen characters of
// ASCII letters, digits and - _ . : + / = @, which covers UUIDs, ULIDs, hex
// ids and the trace ids of common proxies, and excludes spaces, quotes and
// control characters.
func Sane(id string) bool {
	if id == "" || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '/', c == '=', c == '@':
		default:
			return false
		}
	}
	return true
}

// New returns a fresh id: 128 random bits as 32 lower-case hex digits.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Of returns the id a client sent when it is sane, else a new one.
func Of(sent string) string {
	if Sane(sent) {
		return sent
	}
	return New()
}

type ctxKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Handler wraps h so that a record logged with a context carrying an id gets
// the attribute request_id. The binary wraps its one logger, which every
// package gets, so the id is written once. Like every attribute of a record,
// the id lands in the groups a logger opened with WithGroup; the loggers of
// this project open none.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(Key, id))
	}
	return h.next.Handle(ctx, r)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler { return handler{h.next.WithAttrs(attrs)} }
func (h handler) WithGroup(name string) slog.Handler       { return handler{h.next.WithGroup(name)} }
