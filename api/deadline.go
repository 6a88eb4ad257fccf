package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// How long a client may take is bounded in two halves.
//
// Receiving: the binary's http.Server has a ReadTimeout, which net/http sets
// as a deadline on the connection for each request, counted from its first
// byte, and lifts as soon as the body has been read to its end (its
// background read, which notices a client that goes away, then waits without
// one). It therefore bounds what the client controls, sending the request,
// and never the work that follows. A body that misses it fails to read with
// os.ErrDeadlineExceeded, which readLimited answers with 408.
//
// Sending: http.Server's WriteTimeout is counted from the end of the request's
// headers, so it would also bound the handler's work and cut the answer of a
// stage run or a market-communication sync that takes longer than it, with
// nothing but a reset connection to tell the client. writeDeadline sets the
// write deadline per request instead, when the answer's first byte is
// written. An answer that streams for long (no route does today) would have
// to move the deadline on with http.ResponseController as it goes.

// writeDeadline bounds how long the client may take to take the answer: a
// client that stops reading cannot hold the connection and the handler's
// goroutine past Config.WriteTimeout after the answer began.
func (s *Server) writeDeadline(c *gin.Context) {
	rc := http.NewResponseController(c.Writer)
	// The deadline of an earlier answer on this connection is still set, and
	// net/http resets it only for a server with a WriteTimeout. Errors are
	// ignored: a writer without deadlines (httptest's recorder) has no
	// connection to hold.
	_ = rc.SetWriteDeadline(time.Time{})
	w := &deadlineWriter{ResponseWriter: c.Writer, start: func() {
		// A connection deadline is a time on the wall clock, never the
		// server's injected clock.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	}}
	c.Writer = w
	c.Next()
	// A short answer sits in net/http's buffer until the handler returns,
	// and an answer without a body writes nothing through w.
	w.begin()
}

// deadlineWriter starts the write deadline when the answer's first byte is
// written.
type deadlineWriter struct {
	gin.ResponseWriter
	start   func()
	started bool
}

func (w *deadlineWriter) begin() {
	if !w.started {
		w.started = true
		w.start()
	}
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.begin()
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteString(s string) (int, error) {
	w.begin()
	return w.ResponseWriter.WriteString(s)
}

func (w *deadlineWriter) WriteHeaderNow() {
	w.begin()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *deadlineWriter) Flush() {
	w.begin()
	w.ResponseWriter.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
