package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// The HTTP settings come from the YAML file and the environment, have
// bounded defaults, and refuse what makes no sense.
func TestHTTPConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		read    time.Duration
		write   time.Duration
		open    bool
		wantErr string
	}{
		{"defaults", "", nil, 60 * time.Second, 60 * time.Second, false, ""},
		{"yaml", "read_timeout: 90s\nwrite_timeout: 2m\ninbox:\n  webhook_open: true\n", nil, 90 * time.Second, 2 * time.Minute, true, ""},
		{"environment over yaml", "read_timeout: 90s\n",
			map[string]string{"SCHEDBRIDGE_READ_TIMEOUT": "300ms", "SCHEDBRIDGE_WRITE_TIMEOUT": "5s", "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN": "true"},
			300 * time.Millisecond, 5 * time.Second, true, ""},
		{"no read timeout", "read_timeout: 0s\n", nil, 0, 0, false, "read_timeout (SCHEDBRIDGE_READ_TIMEOUT) 0s: must be positive"},
		{"negative write timeout", "", map[string]string{"SCHEDBRIDGE_WRITE_TIMEOUT": "-1s"}, 0, 0, false, "write_timeout (SCHEDBRIDGE_WRITE_TIMEOUT) -1s: must be positive"},
		{"open and a token", "", map[string]string{"SCHEDBRIDGE_INBOX_WEBHOOK_OPEN": "1", "SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN": "t"}, 0, 0, false,
			"inbox.webhook_open (SCHEDBRIDGE_INBOX_WEBHOOK_OPEN) and inbox.webhook_token (SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN) exclude each other"},
		{"open not a boolean", "", map[string]string{"SCHEDBRIDGE_INBOX_WEBHOOK_OPEN": "yes"}, 0, 0, false, "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN"},
		{"no attempts", "inbox:\n  max_attempts: 0\n", nil, 0, 0, false, "inbox.max_attempts (SCHEDBRIDGE_INBOX_MAX_ATTEMPTS) 0: must be positive"},
		{"attempts not a number", "", map[string]string{"SCHEDBRIDGE_INBOX_MAX_ATTEMPTS": "many"}, 0, 0, false, "SCHEDBRIDGE_INBOX_MAX_ATTEMPTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(configFile(t, tt.yaml), func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ReadTimeout != tt.read || c.WriteTimeout != tt.write || c.Inbox.WebhookOpen != tt.open {
				t.Errorf("read %v, write %v, open %v; want %v, %v, %v", c.ReadTimeout, c.WriteTimeout, c.Inbox.WebhookOpen, tt.read, tt.write, tt.open)
			}
		})
	}
}

// TestSlowClientDropped has a client send a submission's body one byte at a
// time to serve with a read timeout of 300 ms: serve answers 408 and closes
// the connection, the request leaves nothing in flight, and it is counted
// and logged as a 408 at info level, not as a server error.
func TestSlowClientDropped(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			in := newInstance(t, d)
			in.env = append(in.env, "SCHEDBRIDGE_READ_TIMEOUT=300ms", "SCHEDBRIDGE_INBOX=false", "SCHEDBRIDGE_SCHEDULER=false",
				"SCHEDBRIDGE_MAKO_SYNC=false")
			in.cli(0, "portfolio", "put", "p1", "--name", "One", "--control-areas", "TenneT")
			key, _ := in.cli(0, "key", "create", "--scope", "data", "--portfolio", "p1")
			srv, logs := in.serve()

			conn, err := net.Dial("tcp", in.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/forecasts HTTP/1.1\r\nHost: schedbridge\r\nX-API-Key: %s\r\nContent-Length: 1000\r\n\r\n", strings.TrimSpace(key))
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			// Bytes that reach the closed connection make the server's
			// kernel reset it rather than end it, which is as closed.
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			answer, err := io.ReadAll(conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("serve kept the connection (read %q)", answer)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(answer)), nil); err != nil || resp.StatusCode != 408 {
				t.Fatalf("answer %q: %v", answer, err)
			}
			const counted = `schedbridge_http_requests_total{code="408",method="POST",route="/v1/forecasts"}`
			waitFor(t, "the 408 to be counted", 5*time.Second, func() bool { return in.metric(counted) == 1 })
			// No API request is in flight (the scrape is not one: the
			// metrics have a listener of their own).
			if in.metric("schedbridge_http_requests_in_flight") != 0 {
				t.Error("a request is still in flight")
			}
			if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := srv.Wait(); err != nil {
				t.Errorf("serve exit: %v\n%s", err, logs)
			}
			if !strings.Contains(logs.String(), `"level":"INFO","msg":"request","method":"POST","route":"/v1/forecasts","status":408`) {
				t.Errorf("no info log of the 408:\n%s", tail(logs.String()))
			}
			if strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Errorf("an error was logged:\n%s", tail(logs.String()))
			}
		})
	}
}
