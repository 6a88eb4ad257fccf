package sqldb

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The facts of the market-partner overview (MakoFacts) take one probe per
// partner and stream into the message and file tables, and one per partner
// address into the mails: 40-100 ms at 900 DSOs, which is most of the
// operators' console summary and of every market-partner view. They change
// only when a registry import, an EDIFACT indexing run or a mail indexing
// run writes, which happens every few minutes at most. So MakoFacts keeps the
// facts it read last, together with the versions of the three writers at
// the time (table mako_versions, migration 20261128000006), and serves them
// again as long as the versions are the same: one small query instead of
// thousands of probes. The versions live in the database, so a write by
// another replica is seen as soon as it commits. The cache also ends after
// makoFactsMaxAge, for a writer that does not bump the versions (a replica
// of an older release during a rolling upgrade).

// Writers of the market-communication facts, one version row each, so that
// an EDIFACT and a mail indexing run do not queue on the same row.
const (
	makoWriterRegistry = "registry"
	makoWriterEDIFACT  = "edifact"
	makoWriterMail     = "mail"
)

// makoFactsMaxAge bounds how long cached facts are served without a full
// read, whatever the versions say.
const makoFactsMaxAge = time.Minute

// makoFactsCache holds the facts of the last full read.
type makoFactsCache struct {
	mu       sync.Mutex
	versions string
	readAt   time.Time
	facts    map[string]mako.PartnerFacts
}

// get returns a copy of the cached facts if they were read at versions and
// not too long ago.
func (c *makoFactsCache) get(versions string, now time.Time) (map[string]mako.PartnerFacts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.facts == nil || c.versions != versions || now.Sub(c.readAt) >= makoFactsMaxAge || now.Before(c.readAt) {
		return nil, false
	}
	return cloneFacts(c.facts), true
}

// put keeps facts read at versions. The versions were read before the
// facts, so the facts are at least as new as the versions say: a write that
// commits in between bumps a version, and the next call reads again.
func (c *makoFactsCache) put(versions string, now time.Time, facts map[string]mako.PartnerFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.versions, c.readAt, c.facts = versions, now, cloneFacts(facts)
}

// cloneFacts copies the maps of facts, so that a caller that changes its
// copy does not change the cache. Messages and contacts are values or are
// not changed by anyone.
func cloneFacts(facts map[string]mako.PartnerFacts) map[string]mako.PartnerFacts {
	out := make(map[string]mako.PartnerFacts, len(facts))
	for id, f := range facts {
		f.Latest = maps.Clone(f.Latest)
		out[id] = f
	}
	return out
}

// makoVersions reads the versions of the writers as one string.
func (db *DB) makoVersions(ctx context.Context) (string, error) {
	var rows []struct {
		Writer  string `bun:"writer"`
		Version int64  `bun:"version"`
	}
	if err := db.bun.NewRaw("SELECT writer, version FROM mako_versions ORDER BY writer").Scan(ctx, &rows); err != nil {
		return "", fmt.Errorf("versions of the market-communication tables: %w", err)
	}
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.Writer + "=" + strconv.FormatInt(r.Version, 10)
	}
	return strings.Join(parts, ","), nil
}

// bumpMakoVersion counts a write of writer in its transaction, so that
// every process's cached facts end when it commits.
func (db *DB) bumpMakoVersion(ctx context.Context, tx bun.Tx, writer string) error {
	if _, err := db.txExec(ctx, tx, "UPDATE mako_versions SET version = version + 1 WHERE writer = ?", writer); err != nil {
		return fmt.Errorf("count the write of the %s facts: %w", writer, err)
	}
	return nil
}
