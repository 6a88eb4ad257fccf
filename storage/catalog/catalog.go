// Package catalog publishes the lake's datasets as Apache Iceberg tables
// (github.com/apache/iceberg-go), so that analysts' engines (Spark, Trino,
// PyIceberg, DuckDB) read the current state of a table instead of every run
// that was ever written.
//
// The catalog is iceberg-go's SQL catalog in the service's own database
// (SQLite on the embedded default, PostgreSQL in production); its two tables,
// iceberg_tables and iceberg_namespace_properties, follow the JDBC catalog's
// layout, which Spark's JdbcCatalog, Trino's JDBC catalog and PyIceberg's
// SqlCatalog open as they are. Every dataset is a table in the namespace
// schedbridge, partitioned by delivery_day (identity), located at
// lake/<dataset> in the bucket, with its metadata under lake/<dataset>/metadata.
//
// The data files stay where storage/lake's writer put them: Publish reads
// their footers and registers them (name mapping, no rewrite), replacing the
// day's partition in one commit whose snapshot summary names the run
// (schedbridge.run-id), the stage (schedbridge.stage) and the delivery day
// (schedbridge.delivery-day). The commit is the publish point: until it
// lands, the table's current snapshot is the previous one.
package catalog

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses (MinIO, S3)
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"golang.org/x/sync/errgroup"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

// Name is the catalog's name in the catalog tables (their catalog_name
// column); engines that open the tables are configured with the same name.
const Name = "schedbridge"

// Namespace holds the lake's tables: schedbridge.forecast_malo and so on.
const Namespace = "schedbridge"

// Snapshot summary properties of a published run.
const (
	PropRunID = "schedbridge.run-id"
	PropStage = "schedbridge.stage"
	PropDay   = "schedbridge.delivery-day"
	// PropWrittenAt is the lake's clock at the commit (RFC 3339), which
	// Current returns as the snapshot's WrittenAt.
	PropWrittenAt = "schedbridge.written-at"
)

// Config says where the catalog and the warehouse are.
type Config struct {
	// DB is the service's database, which holds the catalog's tables.
	DB *sql.DB
	// Postgres selects PostgreSQL's dialect; SQLite's otherwise.
	Postgres bool
	// Warehouse is the URI of the bucket's root, under which the lake's keys
	// live: file:///abs/path/var/bucket for the local directory store,
	// s3://bucket for S3 and MinIO.
	Warehouse string
	// IO holds iceberg-go's file IO properties, such as s3.endpoint,
	// s3.region, s3.access-key-id and s3.secret-access-key.
	IO map[string]string
}

// Catalog is the lake's Iceberg catalog. It implements lake.Catalog and is
// safe for concurrent use; concurrent publishers of one table (replicas)
// are serialised by the catalog's optimistic commit, and the loser retries.
type Catalog struct {
	cat *sqlcat.Catalog
	// db is the catalog's database as bun sees it, for the statements on
	// iceberg_tables that the Iceberg API has no call for (where a table's
	// metadata is, without reading it).
	db        *bun.DB
	warehouse string
	io        map[string]string
}

// Open opens the catalog in cfg.DB, creating its tables and the namespace
// when they are missing. It fails with pipeline.ErrWarehouseMoved when a
// table's entry points outside cfg.Warehouse: the warehouse was moved or
// restored elsewhere, and Relocate must point the tables at it first.
// Opening it anyway would read the tables from the old place, or fail on
// every read once the old place is gone, and a publish would write the
// new metadata back to the old place.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	c, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.checkWarehouse(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// open opens the catalog without checking where its tables are.
func open(ctx context.Context, cfg Config) (*Catalog, error) {
	if cfg.DB == nil || cfg.Warehouse == "" {
		return nil, errors.New("catalog: a database and a warehouse are required")
	}
	dialect, bunDB := sqlcat.SQLite, bun.NewDB(cfg.DB, sqlitedialect.New())
	if cfg.Postgres {
		dialect, bunDB = sqlcat.Postgres, bun.NewDB(cfg.DB, pgdialect.New())
	}
	props := iceberg.Properties{"warehouse": strings.TrimSuffix(cfg.Warehouse, "/")}
	maps.Copy(props, cfg.IO)
	var cat *sqlcat.Catalog
	var err error
	// Replicas that start together race on CREATE TABLE IF NOT EXISTS, which
	// PostgreSQL can refuse to the loser; the second attempt finds the tables.
	for attempt := 0; attempt < 3; attempt++ {
		if cat, err = sqlcat.NewCatalog(Name, cfg.DB, dialect, props); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: open: %w", err)
	}
	err = cat.CreateNamespace(ctx, table.Identifier{Namespace}, iceberg.Properties{
		"comment": "schedbridge's lake: one table per dataset, partitioned by delivery_day"})
	if err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("catalog: create namespace %s: %w", Namespace, err)
	}
	return &Catalog{cat: cat, db: bunDB, warehouse: props["warehouse"], io: cfg.IO}, nil
}

// tableEntry is a table's row in the catalog's iceberg_tables (the JDBC
// layout that iceberg-go's SQL catalog shares with other engines).
type tableEntry struct {
	Name     string `bun:"table_name"`
	Metadata string `bun:"metadata_location"`
}

// entries reads the rows of the namespace's tables.
func (c *Catalog) entries(ctx context.Context) ([]tableEntry, error) {
	var out []tableEntry
	err := c.db.NewSelect().Table("iceberg_tables").Column("table_name", "metadata_location").
		Where("catalog_name = ?", Name).Where("table_namespace = ?", Namespace).
		Where("metadata_location IS NOT NULL").Order("table_name").Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("catalog: list tables: %w", err)
	}
	return out, nil
}

// inPlace reports whether a table's entry names a metadata file at the
// table's place in the configured warehouse.
func (c *Catalog) inPlace(e tableEntry) bool {
	return strings.HasPrefix(e.Metadata, c.URI("lake/"+e.Name+"/metadata/"))
}

// checkWarehouse fails with pipeline.ErrWarehouseMoved when a table's
// metadata is not in its place in the configured warehouse.
func (c *Catalog) checkWarehouse(ctx context.Context) error {
	entries, err := c.entries(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !c.inPlace(e) {
			return c.moved(e.Name, e.Metadata)
		}
	}
	return nil
}

// moved is the error of a table whose entry names a metadata file or a
// location (at) outside its place in the configured warehouse.
func (c *Catalog) moved(table, at string) error {
	return fmt.Errorf("catalog: table %s.%s names %s, outside the warehouse %s (%w): "+
		"after moving or restoring the data directory or the bucket, run `schedbridge lake relocate` once",
		Namespace, table, at, c.warehouse, pipeline.ErrWarehouseMoved)
}

// checkLocation refuses a loaded table that is not at the dataset's place
// in the configured warehouse: another process may have opened the catalog
// before it moved.
func (c *Catalog) checkLocation(tbl *table.Table, dataset string) error {
	if tbl.Location() != c.URI("lake/"+dataset) {
		return c.moved(dataset, tbl.Location())
	}
	return nil
}

// missing marks an error that says a file the catalog names does not
// exist (iceberg-go's file IO reports it as fs.ErrNotExist on the local
// directory and on S3) as pipeline.ErrMissingFile, which no retry mends.
func missing(err error) error {
	if err != nil && errors.Is(err, fs.ErrNotExist) && !errors.Is(err, pipeline.ErrMissingFile) {
		return fmt.Errorf("%w: %w", pipeline.ErrMissingFile, err)
	}
	return err
}

// Close releases the catalog; the database stays open.
func (c *Catalog) Close() error { return c.cat.Close() }

// Ident is the table identifier of a dataset.
func Ident(dataset string) table.Identifier { return table.Identifier{Namespace, dataset} }

// URI is the location of a bucket key in the warehouse.
func (c *Catalog) URI(key string) string { return c.warehouse + "/" + key }

// key is the bucket key of a location in the warehouse.
func (c *Catalog) key(uri string) (string, bool) {
	return strings.CutPrefix(uri, c.warehouse+"/")
}

// tableProps are the properties of every table. Iceberg-go's own commit
// retries stay off: Commit stages again from a fresh load instead, so that
// the check that no newer run is published is redone with each attempt. Old
// metadata files are not deleted by iceberg-go after a commit (a staged
// commit has not landed when iceberg-go sees it succeed); the lake's sweep
// removes the metadata files that the metadata log no longer names. At most
// 20 previous metadata files stay in the log.
var tableProps = iceberg.Properties{
	table.CommitNumRetriesKey:                 "0",
	table.MetadataDeleteAfterCommitEnabledKey: "false",
	table.MetadataPreviousVersionsMaxKey:      "20",
}

// load returns the dataset's table, creating it with the schema when it
// does not exist yet.
func (c *Catalog) load(ctx context.Context, dataset string, schema *arrow.Schema) (*table.Table, error) {
	ident := Ident(dataset)
	tbl, err := c.cat.LoadTable(ctx, ident)
	if err == nil {
		if err := c.checkLocation(tbl, dataset); err != nil {
			return nil, err
		}
		return tbl, nil
	}
	if !errors.Is(err, icecat.ErrNoSuchTable) || schema == nil {
		return nil, missing(err)
	}
	sch, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", dataset, err)
	}
	day, ok := sch.FindFieldByName("delivery_day")
	if !ok {
		return nil, fmt.Errorf("dataset %s has no delivery_day column to partition by", dataset)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{day.ID}, FieldID: partitionFieldID, Name: "delivery_day", Transform: iceberg.IdentityTransform{}})
	tbl, err = c.cat.CreateTable(ctx, ident, sch, icecat.WithPartitionSpec(&spec),
		icecat.WithLocation(c.URI("lake/"+dataset)), icecat.WithProperties(tableProps))
	if errors.Is(err, icecat.ErrTableAlreadyExists) {
		return c.cat.LoadTable(ctx, ident) // another replica created it first
	}
	return tbl, err
}

// partitionFieldID is the id of the tables' one partition field,
// delivery_day: Iceberg numbers partition fields from 1000.
const partitionFieldID = 1000

// dayFiles returns the live data files of the day's partition in the
// table's current snapshot. It reads the manifests itself rather than
// planning a scan, because a scan leaves out files without rows, and an
// empty run (a forecast of a portfolio without locations) is still the
// day's current run. Manifests whose partition summary excludes the day are
// skipped.
func dayFiles(ctx context.Context, tbl *table.Table, day pipeline.Day) ([]iceberg.DataFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return nil, err
	}
	want := int32(day.Date32())
	var files []iceberg.DataFile
	for _, m := range mans {
		if m.ManifestContent() != iceberg.ManifestContentData || !mayHold(m, want) {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			if d, ok := e.DataFile().Partition()[partitionFieldID].(iceberg.Date); ok && int32(d) == want {
				files = append(files, e.DataFile())
			}
		}
	}
	return files, nil
}

// mayHold tells from a manifest's partition summary whether it may list
// files of the day (days since 1970-01-01): Iceberg stores a date bound as
// its 4-byte little-endian day number.
func mayHold(m iceberg.ManifestFile, day int32) bool {
	sums := m.Partitions()
	if len(sums) != 1 || sums[0].LowerBound == nil || sums[0].UpperBound == nil ||
		len(*sums[0].LowerBound) != 4 || len(*sums[0].UpperBound) != 4 {
		return true
	}
	lo := int32(binary.LittleEndian.Uint32(*sums[0].LowerBound))
	hi := int32(binary.LittleEndian.Uint32(*sums[0].UpperBound))
	return lo <= day && day <= hi
}

// runOf is the run id in a data file's key
// (lake/<dataset>/delivery_day=<day>/run=<id>/part-N.parquet), the layout
// storage/lake writes.
func runOf(key string) (int64, bool) {
	_, rest, ok := strings.Cut(key, "/run=")
	if !ok {
		return 0, false
	}
	id, _, _ := strings.Cut(rest, "/")
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil
}

// dataFiles registers the run's files from their footers, for their row
// counts and column statistics: from the footers the writer kept where it
// did (footerIO), else read from the bucket, in parallel. The partition
// value is the day's: a
// file's statistics give it too, except for the empty file of a run
// without rows, which has none; a file whose statistics name another day is
// refused.
func (c *Catalog) dataFiles(ctx context.Context, tbl *table.Table, day pipeline.Day, files []lake.FileInfo) ([]iceberg.DataFile, error) {
	bucketIO, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	kept := footerIO{files: map[string]lake.FileInfo{}}
	for _, f := range files {
		if len(f.Footer) > 0 {
			kept.files[c.URI(f.Key)] = f
		}
	}
	spec := tbl.Spec()
	want := iceberg.Date(day.Date32())
	out := make([]iceberg.DataFile, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, f := range files {
		g.Go(func() error {
			var fio iceio.IO = bucketIO
			if len(f.Footer) > 0 {
				fio = kept
			}
			df, err := table.FileToDataFile(gctx, fio, c.URI(f.Key), tbl.Schema(), spec, 0, tbl.Properties())
			if err != nil {
				return fmt.Errorf("register %s: %w", f.Key, err)
			}
			switch v := df.Partition()[partitionFieldID]; {
			case v == nil:
				b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, df.FilePath(), iceberg.ParquetFile,
					map[int]any{partitionFieldID: want}, map[int]string{partitionFieldID: "date"}, nil, df.Count(), df.FileSizeBytes())
				if err != nil {
					return fmt.Errorf("register %s: %w", f.Key, err)
				}
				df = b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
					SplitOffsets(df.SplitOffsets()).Build()
			case v != want:
				return fmt.Errorf("register %s: its rows are of %v, not of %s", f.Key, v, day)
			}
			out[i] = df
			return nil
		})
	}
	return out, g.Wait()
}

// Current returns the day's partition of the dataset in the table's current
// snapshot as a lake.Snapshot, or a pipeline.NotFound error when none was
// published.
func (c *Catalog) Current(ctx context.Context, dataset string, day pipeline.Day) (lake.Snapshot, error) {
	notFound := &pipeline.Error{Kind: pipeline.NotFound, Message: fmt.Sprintf("no %s snapshot for %s in the lake", dataset, day)}
	tbl, err := c.load(ctx, dataset, nil)
	if errors.Is(err, icecat.ErrNoSuchTable) {
		return lake.Snapshot{}, notFound
	} else if err != nil {
		return lake.Snapshot{}, fmt.Errorf("catalog: load %s: %w", dataset, err)
	}
	files, err := dayFiles(ctx, tbl, day)
	if err != nil {
		return lake.Snapshot{}, fmt.Errorf("catalog: plan %s %s: %w", dataset, day, missing(err))
	}
	if len(files) == 0 {
		return lake.Snapshot{}, notFound
	}
	s := lake.Snapshot{Dataset: dataset, Day: day}
	for _, f := range files {
		key, ok := c.key(f.FilePath())
		id, ok2 := runOf(key)
		if !ok || !ok2 || (s.RunID != 0 && id != s.RunID) {
			return lake.Snapshot{}, fmt.Errorf("catalog: %s %s: data file %s is not one run's file of the lake", dataset, day, f.FilePath())
		}
		s.RunID = id
		s.Files = append(s.Files, lake.FileInfo{Key: key, Rows: f.Count(), Bytes: f.FileSizeBytes()})
		s.Rows += f.Count()
	}
	slices.SortFunc(s.Files, func(a, b lake.FileInfo) int { return strings.Compare(a.Key, b.Key) })
	// The run's snapshot is the newest one that published it for the day.
	snaps := tbl.Metadata().Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- {
		sum := snaps[i].Summary
		if sum != nil && sum.Properties[PropRunID] == strconv.FormatInt(s.RunID, 10) && sum.Properties[PropDay] == day.String() {
			s.WrittenAt = time.UnixMilli(snaps[i].TimestampMs).UTC()
			if t, err := time.Parse(time.RFC3339Nano, sum.Properties[PropWrittenAt]); err == nil {
				s.WrittenAt = t
			}
			break
		}
	}
	return s, nil
}

// compile-time check that the lake can publish through the catalog.
var _ lake.Catalog = (*Catalog)(nil)

// localWarehouse is the warehouse of the local directory store rooted at
// dir (storage/objstore.NewLocal), for iceberg-go's local file IO.
func localWarehouse(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// s3Warehouse is the warehouse and the IO properties of the S3 bucket that
// cfg names (storage/objstore.NewS3), for iceberg-go's S3 IO. MinIO and other
// servers on an endpoint of their own are addressed by path.
func s3Warehouse(cfg objstore.S3Config) (string, map[string]string) {
	scheme := "http://"
	if cfg.UseSSL {
		scheme = "https://"
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	return "s3://" + cfg.Bucket, map[string]string{
		iceio.S3EndpointURL:            scheme + cfg.Endpoint,
		iceio.S3Region:                 region,
		iceio.S3AccessKeyID:            cfg.AccessKey,
		iceio.S3SecretAccessKey:        cfg.SecretKey,
		iceio.S3ForceVirtualAddressing: "false",
	}
}

// LoadTable returns the dataset's Iceberg table, for reads through
// iceberg-go (scans, time travel, the snapshot history).
func (c *Catalog) LoadTable(ctx context.Context, dataset string) (*table.Table, error) {
	tbl, err := c.cat.LoadTable(ctx, Ident(dataset))
	if err != nil {
		return nil, missing(err)
	}
	if err := c.checkLocation(tbl, dataset); err != nil {
		return nil, err
	}
	return tbl, nil
}

// Warehouse is the warehouse and IO properties of a bucket of
// storage/objstore: a local directory store or an S3 store.
func Warehouse(b objstore.Bucket) (string, map[string]string, error) {
	switch b := b.(type) {
	case *objstore.Local:
		w, err := localWarehouse(b.Dir())
		return w, nil, err
	case *objstore.S3:
		w, props := s3Warehouse(b.Config())
		return w, props, nil
	}
	return "", nil, fmt.Errorf("catalog: no Iceberg file IO for a %T store", b)
}
