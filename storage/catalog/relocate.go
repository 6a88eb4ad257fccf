package catalog

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
	"github.com/twmb/avro/ocf"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Relocation is what Relocate did to one table.
type Relocation struct {
	Table string
	// From and To are the table's location before and after.
	From, To string
	// Metadata is the table's new metadata file.
	Metadata string
	// Written is the number of manifest lists and manifests written anew.
	Written int
	// Leftover are the old metadata files (copied with the warehouse, but
	// naming the old place) that could not be removed after the commit;
	// nothing references them.
	Leftover []string
}

// Relocate points the lake's tables at cfg.Warehouse after the warehouse
// was moved or restored elsewhere (a copy of var/ at another path, a
// bucket under another name), with every file copied as it was.
//
// Iceberg keeps absolute locations: the catalog's row names the table's
// metadata file, the metadata names the table's location and each
// snapshot's manifest list, a manifest list names its manifests, and a
// manifest names its data files. The specification requires them to be
// absolute, and engines (Spark, Trino, PyIceberg, DuckDB) follow them as
// they are, so resolving them against the warehouse at read time would
// serve schedbridge alone. Relocate therefore rewrites them: for each table
// whose entry points outside the warehouse it writes, in the new place,
// every manifest and manifest list that a snapshot references and a new
// metadata file, all naming the new place, with the snapshots, their ids,
// summaries and sequence numbers unchanged, so that time travel works as
// before. The data files are not touched. Then one transaction of the
// catalog's database points every relocated table's row at its new
// metadata file, and only if each row still names the metadata that was
// read. Until that commit nothing refers to the new files; after it, the
// old metadata files in the new place, which name the old place, are
// removed. Files in the old place are never read, written or removed.
//
// Tables already in the warehouse are left as they are, so Relocate can run
// again after a failure. The service must be stopped meanwhile: a publish
// between the read and the commit makes the commit fail with
// pipeline.Conflict, and nothing changes.
func Relocate(ctx context.Context, cfg Config, now time.Time) ([]Relocation, error) {
	c, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	entries, err := c.entries(ctx)
	if err != nil {
		return nil, err
	}
	fsys, err := iceio.LoadFS(ctx, c.ioProps(), c.warehouse)
	if err != nil {
		return nil, fmt.Errorf("catalog: file IO of %s: %w", c.warehouse, err)
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("catalog: the file IO of %s cannot write files", c.warehouse)
	}
	var done []Relocation
	var olds [][]string
	type update struct{ table, from, to string }
	var updates []update
	for _, e := range entries {
		if c.inPlace(e) {
			continue
		}
		r, old, err := c.relocateTable(wfs, e, now)
		if err != nil {
			return nil, fmt.Errorf("catalog: relocate %s.%s: %w", Namespace, e.Name, err)
		}
		done = append(done, r)
		olds = append(olds, old)
		updates = append(updates, update{e.Name, e.Metadata, r.Metadata})
	}
	if len(updates) == 0 {
		return nil, nil
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("catalog: relocate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, u := range updates {
		// The previous metadata file is one of the old ones that are
		// removed below, so the row no longer names it.
		res, err := tx.NewUpdate().Table("iceberg_tables").
			Set("metadata_location = ?", u.to).Set("previous_metadata_location = NULL").
			Where("catalog_name = ?", Name).Where("table_namespace = ?", Namespace).
			Where("table_name = ?", u.table).Where("metadata_location = ?", u.from).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: relocate %s.%s: %w", Namespace, u.table, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil, pipeline.Errorf(pipeline.Conflict,
				"catalog: table %s.%s changed while it was relocated (is the service still running?); nothing was changed, run the relocation again",
				Namespace, u.table)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("catalog: relocate: %w", err)
	}
	for i := range done {
		for _, f := range olds[i] {
			if err := wfs.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				done[i].Leftover = append(done[i].Leftover, f)
			}
		}
	}
	return done, nil
}

// ioProps are the properties of iceberg-go's file IO for the warehouse.
func (c *Catalog) ioProps() map[string]string {
	props := map[string]string{"warehouse": c.warehouse}
	for k, v := range c.io {
		props[k] = v
	}
	return props
}

// relocateTable writes the table's manifests, manifest lists and metadata
// anew in the configured warehouse, naming it instead of the old one, and
// returns what it wrote and the old metadata files in the new place, to be
// removed once the catalog points at the new metadata.
func (c *Catalog) relocateTable(fsys iceio.WriteFileIO, e tableEntry, now time.Time) (Relocation, []string, error) {
	marker := "/lake/" + e.Name + "/metadata/"
	i := strings.LastIndex(e.Metadata, marker)
	if i <= 0 || strings.Contains(e.Metadata[i+len(marker):], "/") {
		return Relocation{}, nil, fmt.Errorf("its metadata %s is not in the lake's layout <warehouse>%s<file>", e.Metadata, marker)
	}
	oldW := e.Metadata[:i]
	name := e.Metadata[i+len(marker):]
	version, ok := metadataVersion(name)
	if !ok {
		return Relocation{}, nil, fmt.Errorf("its metadata %s is not an uncompressed NNNNN-<uuid>.metadata.json", e.Metadata)
	}
	r := Relocation{Table: e.Name, From: oldW + "/lake/" + e.Name, To: c.URI("lake/" + e.Name)}
	// here is where a location of the old warehouse is in the new one.
	here := func(loc string) string { return replacePrefix(loc, oldW, c.warehouse).(string) }
	read := func(loc string) ([]byte, error) {
		f, err := fsys.Open(here(loc))
		if err != nil {
			return nil, missing(fmt.Errorf("%w (was it copied with the warehouse?)", err))
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	newFile := func(suffix string) string {
		return r.To + "/metadata/" + uuid.NewString() + suffix
	}

	raw, err := read(e.Metadata)
	if err != nil {
		return r, nil, err
	}
	var meta map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids use all 64 bits
	if err := dec.Decode(&meta); err != nil {
		return r, nil, fmt.Errorf("metadata %s: %w", e.Metadata, err)
	}
	if loc, _ := meta["location"].(string); loc != r.From {
		return r, nil, fmt.Errorf("metadata %s gives the location %q, want %s", e.Metadata, loc, r.From)
	}
	old := []string{here(e.Metadata)}
	if log, ok := meta["metadata-log"].([]any); ok {
		for _, l := range log {
			if m, ok := l.(map[string]any); ok {
				if f, ok := m["metadata-file"].(string); ok {
					old = append(old, here(f))
				}
			}
		}
	}

	// Manifests are shared between snapshots: each is rewritten once.
	type written struct {
		path string
		size int64
	}
	manifests := map[string]written{}
	snaps, _ := meta["snapshots"].([]any)
	lists := make([]string, len(snaps))
	for si, s := range snaps {
		snap, ok := s.(map[string]any)
		if !ok {
			return r, nil, fmt.Errorf("metadata %s: a snapshot is not an object", e.Metadata)
		}
		list, ok := snap["manifest-list"].(string)
		if !ok {
			return r, nil, fmt.Errorf("metadata %s: snapshot %v has no manifest list (format v1 is not written here)", e.Metadata, snap["snapshot-id"])
		}
		data, err := read(list)
		if err != nil {
			return r, nil, err
		}
		out, err := rewriteAvro(data, func(rec map[string]any) error {
			path, ok := rec["manifest_path"].(string)
			if !ok {
				return fmt.Errorf("manifest list %s: an entry has no manifest_path", list)
			}
			w, ok := manifests[path]
			if !ok {
				mdata, err := read(path)
				if err != nil {
					return err
				}
				mout, err := rewriteAvro(mdata, func(entry map[string]any) error {
					replacePrefix(entry, oldW, c.warehouse)
					return nil
				})
				if err != nil {
					return fmt.Errorf("manifest %s: %w", path, err)
				}
				w = written{path: newFile("-m0.avro"), size: int64(len(mout))}
				if err := fsys.WriteFile(w.path, mout); err != nil {
					return err
				}
				manifests[path] = w
				old = append(old, here(path))
				r.Written++
			}
			replacePrefix(rec, oldW, c.warehouse)
			rec["manifest_path"], rec["manifest_length"] = w.path, w.size
			return nil
		})
		if err != nil {
			return r, nil, fmt.Errorf("manifest list %s: %w", list, err)
		}
		lists[si] = fmt.Sprintf("%s/metadata/snap-%v-1-%s.avro", r.To, snap["snapshot-id"], uuid.NewString())
		if err := fsys.WriteFile(lists[si], out); err != nil {
			return r, nil, err
		}
		old = append(old, here(list))
		r.Written++
	}

	// Every other location in the metadata (the table's, and any path a
	// property names) moves with the warehouse; the manifest lists are the
	// new files. The old metadata files are removed, so the log starts
	// anew.
	replacePrefix(meta, oldW, c.warehouse)
	for si, s := range snaps {
		s.(map[string]any)["manifest-list"] = lists[si]
	}
	meta["metadata-log"] = []any{}
	meta["last-updated-ms"] = now.UnixMilli()
	out, err := json.Marshal(meta)
	if err != nil {
		return r, nil, err
	}
	r.Metadata = fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", r.To, version+1, uuid.NewString())
	if err := fsys.WriteFile(r.Metadata, out); err != nil {
		return r, nil, err
	}
	return r, old, nil
}

// metadataVersion is the version NNNNN of an uncompressed metadata file
// named NNNNN-<uuid>.metadata.json, as iceberg-go names them.
func metadataVersion(name string) (int, bool) {
	num, rest, ok := strings.Cut(name, "-")
	if !ok || !strings.HasSuffix(rest, ".metadata.json") || strings.HasSuffix(rest, ".gz.metadata.json") ||
		strings.HasSuffix(rest, ".zstd.metadata.json") {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n >= 0
}

// replacePrefix replaces, in every string of a decoded JSON or Avro value,
// the location prefix from (a warehouse, followed by "/") by to.
func replacePrefix(v any, from, to string) any {
	switch v := v.(type) {
	case string:
		if rest, ok := strings.CutPrefix(v, from+"/"); ok {
			return to + "/" + rest
		}
	case map[string]any:
		for k, x := range v {
			v[k] = replacePrefix(x, from, to)
		}
	case []any:
		for i, x := range v {
			v[i] = replacePrefix(x, from, to)
		}
	}
	return v
}

// rewriteAvro decodes an Avro object container file (a manifest or a
// manifest list), lets edit change each record, and encodes the records
// again with the same schema, the same file metadata (Iceberg keeps the
// table's schema, partition spec, snapshot id and format version there) and
// the same codec.
func rewriteAvro(data []byte, edit func(map[string]any) error) ([]byte, error) {
	rd, err := ocf.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	meta := map[string][]byte{}
	for k, v := range rd.Metadata() {
		if !strings.HasPrefix(k, "avro.") {
			meta[k] = v
		}
	}
	opts := []ocf.WriterOpt{ocf.WithMetadata(meta)}
	switch codec := string(rd.Metadata()["avro.codec"]); codec {
	case "", "null":
	case "deflate":
		opts = append(opts, ocf.WithCodec(ocf.DeflateCodec(flate.DefaultCompression)))
	case "snappy":
		opts = append(opts, ocf.WithCodec(ocf.SnappyCodec()))
	case "zstandard":
		z, err := ocf.ZstdCodec(nil, nil)
		if err != nil {
			return nil, err
		}
		opts = append(opts, ocf.WithCodec(z))
	default:
		return nil, fmt.Errorf("avro codec %q", codec)
	}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, rd.Schema(), opts...)
	if err != nil {
		return nil, err
	}
	for {
		var rec map[string]any
		if err := rd.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			w.Close()
			return nil, err
		}
		if err := edit(rec); err != nil {
			w.Close()
			return nil, err
		}
		if err := w.Encode(rec); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
