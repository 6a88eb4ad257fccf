package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// streamTicks is a Config.StreamTick that the test drives: a send on c is
// taken only by a stream waiting for its next read, so that a tick returns
// once the stream has finished the work before it.
type streamTicks struct{ c chan time.Time }

func (k streamTicks) fn(time.Duration) (<-chan time.Time, func()) { return k.c, func() {} }

func (k streamTicks) tick(t *testing.T) {
	t.Helper()
	select {
	case k.c <- time.Time{}:
	case <-time.After(10 * time.Second):
		t.Fatal("no stream took the tick")
	}
}

// clockTokens verifies the tokens it was given, on the test's clock, and
// refuses them once their exp is past by more than the skew, as the real
// verifier (api/bearer) does.
type clockTokens struct {
	clock *clocktest.Clock
	toks  map[string]bearer.Token
}

func (v clockTokens) Verify(_ context.Context, raw string) (bearer.Token, error) {
	tok, ok := v.toks[raw]
	switch {
	case !ok:
		return bearer.Token{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: unknown")
	case v.clock.Now().After(tok.Expiry.Add(bearer.MaxSkew)):
		return bearer.Token{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: the token has expired")
	}
	return tok, nil
}

// sseStream reads one event stream event by event.
type sseStream struct {
	res *http.Response
	r   *bufio.Reader
}

// next returns the next event, or io.EOF once the server ended the stream.
func (s *sseStream) next() (sseEvent, error) {
	var cur sseEvent
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return sseEvent{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && cur.id != "":
			return cur, nil
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// rest reads until the server ends the stream and returns the events that
// came before; a stream that does not end fails the test when the
// request's deadline cuts it.
func (s *sseStream) rest(t *testing.T) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for {
		ev, err := s.next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("the stream did not end (after %d more events): %v", len(evs), err)
		}
		evs = append(evs, ev)
	}
}

// streamEnv is a server whose event stream is driven by the test's ticks
// and clock, with every kind of principal wired: API keys, access tokens
// and operators signed in to the web console.
type streamEnv struct {
	*webConsole
	ts     *httptest.Server
	ticks  streamTicks
	tokens clockTokens
}

const streamIssuer = "https://idp.stream.test"

func newStreamEnv(t *testing.T, d sqldb.Dialect) *streamEnv {
	w := newWebConsole(t, d)
	ctx := context.Background()
	if _, err := w.db.PutTokenIssuer(ctx, pipeline.TokenIssuer{URL: streamIssuer, Audience: audience, JWKSURI: streamIssuer + "/jwks"}, consoleNow); err != nil {
		t.Fatal(err)
	}
	env := &streamEnv{webConsole: w, ticks: streamTicks{c: make(chan time.Time)},
		tokens: clockTokens{clock: w.clock, toks: map[string]bearer.Token{}}}
	deps := w.deps
	deps.Tokens, deps.TokenClients = env.tokens, w.db
	srv := api.New(api.Config{Now: w.clock.Now, StreamTick: env.ticks.fn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, deps)
	env.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(env.ts.Close)
	return env
}

// record stores events of the given kinds and returns their ids.
func (e *streamEnv) record(t *testing.T, kinds ...string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for _, k := range kinds {
		if err := e.db.RecordEvent(ctx, pipeline.Event{At: e.clock.Now(), Kind: k, Subject: k, Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		id, err := e.db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprint(id))
	}
	return ids
}

// open requests the stream after the event id lastID with the credential
// given as header pairs; a status other than 200 is returned with the body.
func (e *streamEnv) open(t *testing.T, lastID string, headers ...string) (*sseStream, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", e.ts.URL+"/v1/console/events/stream", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	req.Header.Set("Last-Event-ID", lastID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		return nil, res.StatusCode, string(body)
	}
	return &sseStream{res: res, r: bufio.NewReader(res.Body)}, http.StatusOK, ""
}

// TestEventStreamEndsWithItsCredential: a stream already open ends as soon
// as its credential is gone: before the next event it would send, and
// within 30 s (StreamRecheck) when no event comes, or at the exp of an
// access token. The events recorded after the credential went are never
// sent, and the client's reconnect is refused, so that EventSource gives up
// instead of reconnecting for ever.
func TestEventStreamEndsWithItsCredential(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				// credential sets the credential up and returns its headers
				// and the function that takes it away.
				credential func(t *testing.T, e *streamEnv) (headers []string, end func())
				// quiet: no event comes after the credential went, and the
				// clock moves by wait before the stream's next tick.
				quiet bool
				wait  time.Duration
				// reconnect is the status of the client's reconnect.
				reconnect int
			}{
				{name: "key revoked", reconnect: 401, credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
					return e.key(t, "k1"), func() { e.revokeKey(t, "k1") }
				}},
				{name: "key revoked, no event", quiet: true, wait: 30 * time.Second, reconnect: 401,
					credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
						return e.key(t, "k2"), func() { e.revokeKey(t, "k2") }
					}},
				{name: "operator signed out", reconnect: 401, credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
					cookie, csrf := e.signIn(t, "out@firma.test", portal.MethodSSO, true)
					return []string{"Cookie", cookie}, func() { e.logout(t, cookie, csrf) }
				}},
				{name: "operator signed out, no event", quiet: true, wait: 30 * time.Second, reconnect: 401,
					credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
						cookie, csrf := e.signIn(t, "quiet@firma.test", portal.MethodSSO, true)
						return []string{"Cookie", cookie}, func() { e.logout(t, cookie, csrf) }
					}},
				{name: "operator removed", reconnect: 403, credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
					if _, err := e.db.AddOperator(context.Background(), portal.Operator{Email: "list@firma.test", AddedAt: consoleNow, AddedBy: "cli"}); err != nil {
						t.Fatal(err)
					}
					cookie, _ := e.signIn(t, "list@firma.test", portal.MethodSSO, false)
					return []string{"Cookie", cookie}, func() {
						if err := e.db.RemoveOperator(context.Background(), "list@firma.test"); err != nil {
							t.Fatal(err)
						}
					}
				}},
				{name: "token client revoked", reconnect: 401, credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
					return e.token(t, "c1", e.clock.Now().Add(time.Hour)), func() {
						if err := e.db.RevokeTokenClient(context.Background(), streamIssuer, "c1", e.clock.Now()); err != nil {
							t.Fatal(err)
						}
					}
				}},
				// The token is good for another 10 s (its exp plus the skew
				// the verifier allows): the stream ends then, well before the
				// 30 s after which it would look again anyway.
				{name: "token expired, no event", quiet: true, wait: 11 * time.Second, reconnect: 401,
					credential: func(t *testing.T, e *streamEnv) ([]string, func()) {
						return e.token(t, "c2", e.clock.Now().Add(10*time.Second-bearer.MaxSkew)), func() {}
					}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e := newStreamEnv(t, d)
					headers, end := tc.credential(t, e)
					before := e.record(t, "run.started")
					s, code, body := e.open(t, "0", headers...)
					if code != http.StatusOK {
						t.Fatalf("open: %d %s", code, body)
					}
					if ev, err := s.next(); err != nil || ev.id != before[0] {
						t.Fatalf("first event: %+v %v", ev, err)
					}
					end()
					if !tc.quiet {
						e.record(t, "run.failed")
					}
					e.clock.Add(tc.wait)
					e.ticks.tick(t)
					if evs := s.rest(t); len(evs) != 0 {
						t.Errorf("sent after the credential went: %+v", evs)
					}
					if _, code, body := e.open(t, before[0], headers...); code != tc.reconnect {
						t.Errorf("reconnect: %d %s, want %d", code, body, tc.reconnect)
					}
				})
			}
		})
	}
}

// TestEventStreamMaxAge: a stream ends after StreamMaxAge (30 min by
// default), also while events wait; the client's reconnect with the last
// id it received gets exactly the rest: nothing lost, nothing twice.
func TestEventStreamMaxAge(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := newStreamEnv(t, d)
			headers := e.key(t, "long")
			all := e.record(t, "run.started", "run.failed", "inbox.rejected")
			s, code, body := e.open(t, "0", headers...)
			if code != http.StatusOK {
				t.Fatalf("open: %d %s", code, body)
			}
			var got []sseEvent
			for range 3 {
				ev, err := s.next()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			// 29 minutes on, the stream still delivers.
			e.clock.Add(29 * time.Minute)
			all = append(all, e.record(t, "schedule.sent")...)
			e.ticks.tick(t)
			ev, err := s.next()
			if err != nil {
				t.Fatalf("at 29 min: %v", err)
			}
			got = append(got, ev)
			// At 30 minutes it ends, with events waiting.
			all = append(all, e.record(t, "tso.answer", "run.succeeded")...)
			e.clock.Add(time.Minute)
			e.ticks.tick(t)
			got = append(got, s.rest(t)...)
			if len(got) == len(all) {
				t.Fatalf("the stream sent everything and did not end at its maximum age: %+v", got)
			}
			// The client reconnects after the last event it received; the
			// new stream starts its own 30 minutes.
			all = append(all, e.record(t, "inbox.staged")...)
			s, code, body = e.open(t, got[len(got)-1].id, headers...)
			if code != http.StatusOK {
				t.Fatalf("reconnect: %d %s", code, body)
			}
			for len(got) < len(all) {
				ev, err := s.next()
				if err != nil {
					t.Fatalf("after reconnecting, %d of %d events: %v", len(got), len(all), err)
				}
				got = append(got, ev)
			}
			ids := make([]string, len(got))
			for i, ev := range got {
				ids[i] = ev.id
			}
			if strings.Join(ids, ",") != strings.Join(all, ",") {
				t.Errorf("events received %v, recorded %v", ids, all)
			}
		})
	}
}

// key creates a process key and returns its header.
func (e *streamEnv) key(t *testing.T, id string) []string {
	t.Helper()
	secret := "sbk_stream_" + id
	if err := e.db.CreateKey(context.Background(), pipeline.APIKey{ID: id, Scope: pipeline.ScopeProcess, CreatedAt: consoleNow}, pipeline.HashKey(secret)); err != nil {
		t.Fatal(err)
	}
	return []string{"X-API-Key", secret}
}

func (e *streamEnv) revokeKey(t *testing.T, id string) {
	t.Helper()
	if err := e.db.RevokeKey(context.Background(), id, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// token registers a process client and returns the header of a token of
// it that expires at exp.
func (e *streamEnv) token(t *testing.T, client string, exp time.Time) []string {
	t.Helper()
	if err := e.db.CreateTokenClient(context.Background(), pipeline.TokenClient{ID: "cli_" + client, Issuer: streamIssuer,
		ClientID: client, Scope: pipeline.ScopeProcess, CreatedAt: consoleNow}); err != nil {
		t.Fatal(err)
	}
	raw := "token-of-" + client
	e.tokens.toks[raw] = bearer.Token{Issuer: streamIssuer, Subject: client, ClientID: client, ID: "jti-" + client,
		Scopes: []string{pipeline.TokenScopeValue(pipeline.ScopeProcess)}, Expiry: exp}
	return []string{"Authorization", "Bearer " + raw}
}

// logout signs the session out through the portal, as the console's
// sign-out button does.
func (e *streamEnv) logout(t *testing.T, cookie, csrf string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/auth/logout", nil)
	req.Header.Set("Cookie", cookie)
	req.Header.Set("X-CSRF-Token", csrf)
	req.Header.Set("Origin", "http://console.test")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("logout: %d %s", res.StatusCode, body)
	}
}
