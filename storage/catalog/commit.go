package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// A commit of the catalog has two steps, so that a run's lake tables become
// current in the same database transaction as the run's other results (its
// read model, its schedule versions, its success):
//
//  1. Stage writes, for every table the run publishes, the Iceberg metadata
//     that makes the run's files the day's partition: manifests, a manifest
//     list and a new metadata file. Nothing references them yet, so readers
//     and the table's current snapshot are unchanged, and a process that
//     dies here leaves only files that the lake's sweep removes.
//  2. Apply points each table's row in iceberg_tables from the metadata the
//     stage started from to the new one, a compare-and-swap per table, in
//     the caller's transaction. The transaction's commit is the run's
//     commit point. A swap that finds the row moved on (a concurrent commit
//     of the same table landed first) fails with ErrLost; the caller rolls
//     back and stages again from a fresh load.
//
// iceberg-go's SQL catalog commits in a transaction of its own, so the
// staging step drives iceberg-go's table transaction against stagingIO, a
// table.CatalogIO that writes the new metadata file and records the swap
// instead of committing it.

// ErrLost says that a staged commit lost to a concurrent commit of one of its
// tables. Nothing of it became current; stage it again.
var ErrLost = errors.New("a concurrent commit of the table landed first")

// Staged is a commit of runs into their tables, prepared by Stage and made
// current by Apply.
type Staged struct {
	swaps []swap
}

// swap moves a table's catalog row from one metadata file to the next.
type swap struct {
	table    string
	from, to string
}

// Stage prepares the publications' commit: each makes its run's files the
// day's partition of its dataset's table. It fails with pipeline.Conflict
// when a table's day already holds the run or a later one, and refuses two
// publications of one table (a run's jobs publish one table together).
func (c *Catalog) Stage(ctx context.Context, pubs ...lake.Publication) (*Staged, error) {
	return c.stageAll(ctx, pubs, map[string][]iceberg.DataFile{})
}

// stageAll stages the publications. files holds each dataset's data files,
// read from the footers of its run's files by the first attempt that gets
// that far, for the attempts after it: a table's schema and partition spec
// do not change between attempts.
func (c *Catalog) stageAll(ctx context.Context, pubs []lake.Publication, files map[string][]iceberg.DataFile) (*Staged, error) {
	s := &Staged{}
	seen := map[string]bool{}
	for _, p := range pubs {
		if seen[p.Dataset] {
			return nil, pipeline.Errorf(pipeline.Invalid, "catalog: two publications of %s in one commit", p.Dataset)
		}
		seen[p.Dataset] = true
		sw, err := c.stage(ctx, p, files)
		if err != nil {
			if pipeline.KindOf(err) == pipeline.Conflict {
				return nil, err
			}
			return nil, fmt.Errorf("catalog: stage %s %s run %d: %w", p.Dataset, p.Day, p.RunID, missing(err))
		}
		s.swaps = append(s.swaps, sw)
	}
	return s, nil
}

// Apply makes the staged commit current within tx: the commit lands with
// tx's commit and not at all when tx rolls back. It fails with ErrLost when a
// table's metadata is no longer the one the stage started from.
func (s *Staged) Apply(ctx context.Context, tx bun.IDB) error {
	for _, sw := range s.swaps {
		res, err := tx.NewUpdate().Table("iceberg_tables").
			Set("metadata_location = ?", sw.to).Set("previous_metadata_location = ?", sw.from).
			Where("catalog_name = ?", Name).Where("table_namespace = ?", Namespace).
			Where("table_name = ?", sw.table).Where("metadata_location = ?", sw.from).Exec(ctx)
		if err != nil {
			return fmt.Errorf("catalog: commit %s.%s: %w", Namespace, sw.table, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("catalog: commit %s.%s: %w", Namespace, sw.table, err)
		} else if n == 0 {
			return fmt.Errorf("catalog: commit %s.%s: %w", Namespace, sw.table, ErrLost)
		}
	}
	return nil
}

// maxCommitAttempts bounds the attempts of a commit that loses to
// concurrent ones.
const maxCommitAttempts = 10

// Commit stages the publications and applies them in a transaction that
// inTx runs: inTx calls its argument with the transaction, and may do more
// in it (the run's other results), so that all of it lands together. A
// commit that loses to a concurrent one is staged again from a fresh load,
// which also redoes the check that no newer run is published.
func (c *Catalog) Commit(ctx context.Context, pubs []lake.Publication,
	inTx func(ctx context.Context, apply func(ctx context.Context, tx bun.IDB) error) error) error {
	files := map[string][]iceberg.DataFile{}
	for attempt := 1; ; attempt++ {
		st, err := c.stageAll(ctx, pubs, files)
		if err != nil {
			return err
		}
		err = inTx(ctx, st.Apply)
		if err == nil || !errors.Is(err, ErrLost) || attempt == maxCommitAttempts {
			return err
		}
		// Spread the retries of replicas that lost to the same commit. The
		// lost attempt's metadata files are nobody's; the sweep removes them.
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(10*time.Millisecond)))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Publish makes the run's files the day's partition of the dataset's table
// in one commit of its own: a first publish appends them, a later one
// replaces the partition's files with them (an overwrite snapshot). It fails
// with pipeline.Conflict when the day's partition already holds this run or a
// later one.
func (c *Catalog) Publish(ctx context.Context, p lake.Publication) error {
	return c.Commit(ctx, []lake.Publication{p}, func(ctx context.Context, apply func(context.Context, bun.IDB) error) error {
		return c.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return apply(ctx, tx) })
	})
}

// Prepare creates the dataset's table with the schema when it does not
// exist yet, so that a later commit of a run's parts, which knows only their
// files, finds it.
func (c *Catalog) Prepare(ctx context.Context, dataset string, schema *arrow.Schema) error {
	_, err := c.load(ctx, dataset, schema)
	return err
}

// stage prepares one publication's commit.
func (c *Catalog) stage(ctx context.Context, p lake.Publication, files map[string][]iceberg.DataFile) (swap, error) {
	tbl, err := c.load(ctx, p.Dataset, p.Schema)
	if err != nil {
		return swap{}, err
	}
	old, err := dayFiles(ctx, tbl, p.Day)
	if err != nil {
		return swap{}, err
	}
	for _, f := range old {
		key, _ := c.key(f.FilePath())
		if id, ok := runOf(key); ok && id >= p.RunID {
			return swap{}, pipeline.Errorf(pipeline.Conflict, "lake %s %s: run %d is already published, run %d cannot replace it",
				p.Dataset, p.Day, id, p.RunID)
		}
	}
	add, ok := files[p.Dataset]
	if !ok {
		if add, err = c.dataFiles(ctx, tbl, p.Day, p.Files); err != nil {
			return swap{}, err
		}
		files[p.Dataset] = add
	}
	props := iceberg.Properties{
		PropRunID: strconv.FormatInt(p.RunID, 10),
		PropStage: string(pipeline.StageOfDataset(p.Dataset)),
		PropDay:   p.Day.String(),
	}
	if !p.WrittenAt.IsZero() {
		props[PropWrittenAt] = p.WrittenAt.UTC().Format(time.RFC3339Nano)
	}
	sio := &stagingIO{cat: c, base: tbl}
	staged := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) { return tbl.FS(ctx) }, sio)
	tx := staged.NewTransaction()
	if len(old) == 0 {
		err = tx.AddDataFiles(ctx, add, props)
	} else {
		err = tx.ReplaceDataFilesWithDataFiles(ctx, old, add, props)
	}
	if err != nil {
		return swap{}, err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return swap{}, err
	}
	if sio.staged == "" {
		return swap{}, fmt.Errorf("catalog: %s: the transaction staged no metadata", p.Dataset)
	}
	return swap{table: p.Dataset, from: tbl.MetadataLocation(), to: sio.staged}, nil
}

// stagingIO is the table.CatalogIO of a staged table: its CommitTable writes
// the table's next metadata file and remembers where, but leaves the
// catalog's row alone; Apply moves the row.
type stagingIO struct {
	cat    *Catalog
	base   *table.Table
	staged string // the metadata file written, once CommitTable ran
}

func (s *stagingIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return s.cat.cat.LoadTable(ctx, ident)
}

// noDeleteAfterCommit keeps iceberg-go from deleting the metadata files that
// fall out of the metadata log when it sees a commit succeed: a staged
// commit has not landed when it does, and its transaction may roll back.
// The lake's sweep removes metadata files that no metadata log names.
var noDeleteAfterCommit = iceberg.Properties{table.MetadataDeleteAfterCommitEnabledKey: "false"}

func (s *stagingIO) CommitTable(ctx context.Context, _ table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	base, baseLoc := s.base.Metadata(), s.base.MetadataLocation()
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			return nil, "", err
		}
	}
	if base.Properties()[table.MetadataDeleteAfterCommitEnabledKey] != "false" {
		updates = append(updates, table.NewSetPropertiesUpdate(noDeleteAfterCommit))
	}
	meta, err := table.UpdateTableMetadata(base, updates, baseLoc)
	if err != nil {
		return nil, "", err
	}
	if c := meta.Properties().Get(table.MetadataCompressionKey, table.MetadataCompressionDefault); c != table.MetadataCompressionCodecNone {
		return nil, "", fmt.Errorf("catalog: metadata compression %q is not supported", c)
	}
	version, ok := metadataVersion(path.Base(baseLoc))
	if !ok {
		return nil, "", fmt.Errorf("catalog: no version in the metadata file name %s", baseLoc)
	}
	prov, err := table.LoadLocationProvider(meta.Location(), meta.Properties())
	if err != nil {
		return nil, "", err
	}
	loc, err := prov.NewTableMetadataFileLocation(version + 1)
	if err != nil {
		return nil, "", err
	}
	fs, err := s.base.FS(ctx)
	if err != nil {
		return nil, "", err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, "", errors.New("catalog: the warehouse's file IO cannot write")
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, "", fmt.Errorf("catalog: encode metadata: %w", err)
	}
	if err := wfs.WriteFile(loc, b); err != nil {
		return nil, "", fmt.Errorf("catalog: write %s: %w", loc, err)
	}
	s.staged = loc
	return meta, loc, nil
}
