package lake_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// tables is the part of the catalog that the sweep's tests read.
type tables interface {
	LoadTable(ctx context.Context, dataset string) (*table.Table, error)
	URI(key string) string
}

// metaKeys returns the keys of the manifest lists and manifests of the
// table's snapshots that keep selects.
func metaKeys(t *testing.T, cat tables, tbl *table.Table, keep func(table.Snapshot) bool) map[string]bool {
	t.Helper()
	fs, err := tbl.FS(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	add := func(uri string) {
		key, ok := strings.CutPrefix(uri, cat.URI(""))
		if !ok {
			t.Fatalf("%s is outside the warehouse %s", uri, cat.URI(""))
		}
		keys[key] = true
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if !keep(s) {
			continue
		}
		add(s.ManifestList)
		mans, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mans {
			add(m.FilePath())
		}
	}
	return keys
}

// onlyExpired returns the keys of the manifest lists and manifests that
// only the dataset's snapshots other than the current one reference: what
// an expiry of every other snapshot leaves unreferenced.
func onlyExpired(t *testing.T, cat tables, dataset string) []string {
	t.Helper()
	tbl, err := cat.LoadTable(ctxT(t), dataset)
	if err != nil {
		t.Fatal(err)
	}
	cur := tbl.CurrentSnapshot().SnapshotID
	current := metaKeys(t, cat, tbl, func(s table.Snapshot) bool { return s.SnapshotID == cur })
	var out []string
	for k := range metaKeys(t, cat, tbl, func(s table.Snapshot) bool { return s.SnapshotID != cur }) {
		if !current[k] {
			out = append(out, k)
		}
	}
	return out
}

// referenced returns the keys of the metadata files that the dataset's
// table references: its current metadata file, those of its metadata log,
// and the manifest lists and manifests of its snapshots.
func referenced(t *testing.T, cat tables, dataset string) []string {
	t.Helper()
	tbl, err := cat.LoadTable(ctxT(t), dataset)
	if err != nil {
		t.Fatal(err)
	}
	keys := metaKeys(t, cat, tbl, func(table.Snapshot) bool { return true })
	keys[strings.TrimPrefix(tbl.MetadataLocation(), cat.URI(""))] = true
	for e := range tbl.Metadata().PreviousFiles() {
		keys[strings.TrimPrefix(e.MetadataFile, cat.URI(""))] = true
	}
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// emptyDirs returns the empty folders below dir.
func emptyDirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return err
		}
		if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
