package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/schedbridge/schedbridge/storage/lake"
)

// Expire expires, in every table, the snapshots older than olderThan except
// each table's current one, and returns what the tables still reference
// (lake.Retained): the data files of the remaining snapshots, their manifest
// lists and manifests, the statistics files, the current metadata file and
// the files of its metadata log. It deletes nothing itself: iceberg-go would
// delete what only the expired snapshots referenced through its own file
// IO, past the store (on the local store that left the emptied run folders
// behind) and past the sweep's count. The lake's sweep deletes, through the
// store, every file of a table's folders that Retained lacks once it is old.
func (c *Catalog) Expire(ctx context.Context, olderThan time.Duration) (lake.Retained, error) {
	r := lake.Retained{Keys: map[string]bool{}, Expired: map[string]bool{}}
	for ident, err := range c.cat.ListTables(ctx, table.Identifier{Namespace}) {
		if err != nil {
			return r, fmt.Errorf("catalog: list tables: %w", err)
		}
		if err := c.expire(ctx, ident, olderThan, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// expire expires the table's old snapshots and adds what it references to r.
func (c *Catalog) expire(ctx context.Context, ident table.Identifier, olderThan time.Duration, r *lake.Retained) error {
	name := strings.Join(ident, ".")
	tbl, err := c.cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("catalog: load %s: %w", name, missing(err))
	}
	// The sweep deletes at the keys that the metadata names: a table of a
	// moved warehouse names the old place, which may be the original of a
	// copy.
	if err := c.checkLocation(tbl, ident[len(ident)-1]); err != nil {
		return err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	// dataKeys are the keys of the data files that each manifest lists as
	// live; snapshots share most of their manifests, so each is read once.
	dataKeys := map[string][]string{}
	// add adds the snapshot's manifest list, its manifests and their data
	// files to keep, and the data files alone to data.
	add := func(snap table.Snapshot, keep, data map[string]bool) error {
		c.addKey(keep, snap.ManifestList)
		mans, err := snap.Manifests(fs)
		if err != nil {
			return fmt.Errorf("catalog: manifests of %s: %w", name, missing(err))
		}
		for _, m := range mans {
			c.addKey(keep, m.FilePath())
			keys, ok := dataKeys[m.FilePath()]
			if !ok {
				entries, err := m.FetchEntries(fs, true)
				if err != nil {
					return fmt.Errorf("catalog: manifest %s: %w", m.FilePath(), missing(err))
				}
				keys = []string{}
				for _, e := range entries {
					if key, ok := c.key(e.DataFile().FilePath()); ok {
						keys = append(keys, key)
					}
				}
				dataKeys[m.FilePath()] = keys
			}
			for _, k := range keys {
				keep[k] = true
				data[k] = true
			}
		}
		return nil
	}

	before := tbl
	if tbl.CurrentSnapshot() != nil {
		tx := tbl.NewTransaction()
		err := tx.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(1), table.WithPostCommit(false))
		if err != nil {
			return fmt.Errorf("catalog: expire %s: %w", name, err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			return fmt.Errorf("catalog: expire %s: %w", name, err)
		}
	}
	remaining, live := map[int64]bool{}, map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		remaining[snap.SnapshotID] = true
		if err := add(snap, r.Keys, live); err != nil {
			return err
		}
	}
	// The data files of the expired snapshots tell the sweep the replaced
	// runs from those never published. That is only the kind it counts
	// them under, so a manifest that cannot be read is passed over.
	for _, snap := range before.Metadata().Snapshots() {
		if remaining[snap.SnapshotID] {
			continue
		}
		r.Snapshots++
		expired := map[string]bool{}
		_ = add(snap, map[string]bool{}, expired)
		for k := range expired {
			if !live[k] {
				r.Expired[k] = true
			}
		}
	}
	c.addKey(r.Keys, tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		c.addKey(r.Keys, e.MetadataFile)
	}
	for s := range tbl.Metadata().Statistics() {
		c.addKey(r.Keys, s.StatisticsPath)
	}
	for s := range tbl.Metadata().PartitionStatistics() {
		c.addKey(r.Keys, s.StatisticsPath)
	}
	if loc, ok := c.key(tbl.Location()); ok {
		r.Metadata = append(r.Metadata, strings.TrimSuffix(loc, "/")+"/metadata/")
	}
	return nil
}

// addKey adds the key of the file at uri to keys, when the file is in the
// warehouse.
func (c *Catalog) addKey(keys map[string]bool, uri string) {
	if key, ok := c.key(uri); ok {
		keys[key] = true
	}
}
