package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type apiKeyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID          string     `bun:"id,pk"`
	Hash        string     `bun:"hash"`
	Scope       string     `bun:"scope"`
	PortfolioID *string    `bun:"portfolio_id"`
	Label       string     `bun:"label"`
	CreatedAt   time.Time  `bun:"created_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	LastUsedAt  *time.Time `bun:"last_used_at"`
}

func (r apiKeyRow) domain() pipeline.APIKey {
	k := pipeline.APIKey{ID: r.ID, Scope: pipeline.Scope(r.Scope), Label: r.Label, CreatedAt: r.CreatedAt.UTC()}
	if r.PortfolioID != nil {
		k.PortfolioID = *r.PortfolioID
	}
	if r.RevokedAt != nil {
		t := r.RevokedAt.UTC()
		k.RevokedAt = &t
	}
	if r.LastUsedAt != nil {
		t := r.LastUsedAt.UTC()
		k.LastUsedAt = &t
	}
	return k
}

// CreateKey stores a key by the hash of its secret.
func (db *DB) CreateKey(ctx context.Context, k pipeline.APIKey, secretHash string) error {
	if k.Scope.NeedsPortfolio() && k.PortfolioID == "" {
		return pipeline.Errorf(pipeline.Invalid, "a %s key belongs to a portfolio: pass --portfolio", k.Scope)
	}
	if !k.Scope.NeedsPortfolio() && k.PortfolioID != "" {
		return pipeline.Errorf(pipeline.Invalid, "a %s key does not belong to a portfolio", k.Scope)
	}
	row := apiKeyRow{ID: k.ID, Hash: secretHash, Scope: string(k.Scope), Label: k.Label, CreatedAt: k.CreatedAt.UTC()}
	if k.PortfolioID != "" {
		if _, err := db.Portfolio(ctx, k.PortfolioID); err != nil {
			return err
		}
		row.PortfolioID = &k.PortfolioID
	}
	if _, err := db.bun.NewInsert().Model(&row).Exec(ctx); err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	return nil
}

// KeyByHash finds a key, revoked or not, by the hash of its secret.
func (db *DB) KeyByHash(ctx context.Context, hash string) (pipeline.APIKey, error) {
	// The hash is a credential's: neither message names it.
	return getOne[apiKeyRow](ctx, db, "key", "hash", hash, "key not found")
}

// Keys lists all keys, oldest first.
func (db *DB) Keys(ctx context.Context) ([]pipeline.APIKey, error) {
	return listAll[apiKeyRow](ctx, db, "keys", "created_at", "id")
}

// TouchKey records that key id was used at at. The write happens only when
// the recorded use is older than pipeline.KeyUseGranularity, decided in the
// statement itself, so that concurrent requests of one key write it once.
//
// The request it belongs to is answered whether or not the use is recorded.
// On SQLite it therefore waits at most touchBusy for the write lock instead
// of the busy timeout: while a bulk file is staged, which holds the lock for
// seconds, the first request of each key would otherwise wait the whole
// busy timeout (10 s) before its answer.
func (db *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	at = at.UTC()
	touch := func(idb bun.IDB) error {
		_, err := idb.NewUpdate().Model((*apiKeyRow)(nil)).Set("last_used_at = ?", at).
			Where("id = ?", id).
			WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
				return q.Where("last_used_at IS NULL").WhereOr("last_used_at <= ?", at.Add(-pipeline.KeyUseGranularity))
			}).Exec(ctx)
		return err
	}
	var err error
	if db.dialect == SQLite {
		err = db.withBusyTimeout(ctx, touchBusy, func(conn bun.Conn) error { return touch(conn) })
	} else {
		err = touch(db.bun)
	}
	if err != nil {
		return fmt.Errorf("record use of key %s: %w", id, busyAsUnavailable(err))
	}
	return nil
}

// RevokeKey marks a key revoked. Revoking twice keeps the first time.
func (db *DB) RevokeKey(ctx context.Context, id string, now time.Time) error {
	res, err := db.bun.NewUpdate().Model((*apiKeyRow)(nil)).Set("revoked_at = ?", now.UTC()).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	if err != nil {
		return fmt.Errorf("revoke key %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := db.keyByID(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) keyByID(ctx context.Context, id string) (pipeline.APIKey, error) {
	return getOne[apiKeyRow](ctx, db, "key "+id, "id", id, "key "+id+" not found")
}

// touchBusy is how long recording a key's use waits for SQLite's write lock.
const touchBusy = 50 * time.Millisecond

// withBusyTimeout runs fn on a SQLite connection of its own whose busy
// timeout is d, and gives the connection back with the pool's.
func (db *DB) withBusyTimeout(ctx context.Context, d time.Duration, fn func(bun.Conn) error) error {
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return err
	}
	defer restoreConn(conn, fmt.Sprintf("PRAGMA busy_timeout = %d", db.busy.Milliseconds()))
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", d.Milliseconds())); err != nil {
		return err
	}
	return fn(conn)
}
