package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestKeyLastUsed: a request records its key's use, at most once a minute,
// so that "key list" shows when a lost phone's key was last used. A request
// refused for its scope still used the key.
func TestKeyLastUsed(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			clock := clocktest.New(now)
			testKeyLastUsed(t, clock, newFixture(t, d, api.Config{Now: clock.Now}))
		})
	}
}

func testKeyLastUsed(t *testing.T, clock *clocktest.Clock, f *fixture) {
	lastUsed := func(id string) *time.Time {
		keys, err := f.db.Keys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.ID == id {
				return k.LastUsedAt
			}
		}
		t.Fatalf("key %s not listed", id)
		return nil
	}
	if got := lastUsed("key_mobile"); got != nil {
		t.Fatalf("unused key: last used %v", got)
	}
	if r := f.as("mobile", http.MethodGet, "/v1/console/events", nil); r.code != http.StatusForbidden {
		t.Fatalf("mobile key on the console: %d %s", r.code, r.body)
	}
	first := lastUsed("key_mobile")
	if first == nil || !first.Equal(now) {
		t.Fatalf("after a request: last used %v, want %v", first, now)
	}
	for _, tc := range []struct {
		after time.Duration
		want  time.Time
	}{
		{30 * time.Second, now},                       // within the minute: not written again
		{90 * time.Second, now.Add(90 * time.Second)}, // a minute later: written
	} {
		at := now.Add(tc.after)
		if got := f.asAt(clock, at, "mobile", "/v1/console/events"); got != http.StatusForbidden {
			t.Fatalf("status %d", got)
		}
		if got := lastUsed("key_mobile"); got == nil || !got.Equal(tc.want) {
			t.Errorf("request at +%s: last used %v, want %v", tc.after, got, tc.want)
		}
	}
	if got := lastUsed("key_data2"); got != nil {
		t.Errorf("a key that sent nothing has a last use: %v", got)
	}
}

// asAt sends a GET with key at the clock time at.
func (f *fixture) asAt(clock *clocktest.Clock, at time.Time, key, path string) int {
	clock.Set(at)
	return f.as(key, http.MethodGet, path, nil).code
}
