package laketest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AvscVersion is the pinned npm avsc that reads Iceberg's Avro manifests;
// keep it in sync with deploy/dev/test-deps.sh.
const AvscVersion = "5.7.9"

//go:embed iceberg.mjs
var icebergScript []byte

// IcebergSnapshot is one snapshot of an Iceberg table as the independent
// reader (iceberg.mjs: the table's metadata.json and its Avro manifest list
// and manifests read with npm avsc) sees it.
type IcebergSnapshot struct {
	ID      string            `json:"snapshot"` // decimal: ids use all 64 bits
	Summary map[string]string `json:"summary"`
	Files   []IcebergFile     `json:"files"`
}

// IcebergFile is a live data file of a snapshot.
type IcebergFile struct {
	Path      string         `json:"path"` // as the manifest records it: a URI
	Records   int64          `json:"records"`
	Partition map[string]any `json:"partition"`
}

// LocalPath returns the file's path on this machine for a file:// URI, and
// the URI itself otherwise.
func (f IcebergFile) LocalPath() string {
	if p, ok := strings.CutPrefix(f.Path, "file://"); ok {
		return p
	}
	return f.Path
}

// IcebergFiles lists the live data files of a snapshot of the table whose
// current metadata file is metadataPath (a local file), without iceberg-go:
// the current snapshot when snapshotID is "", otherwise that snapshot.
func (d *Duck) IcebergFiles(ctx context.Context, metadataPath, snapshotID string) (*IcebergSnapshot, error) {
	pkg, err := os.ReadFile(filepath.Join(d.dir, "node_modules", "avsc", "package.json"))
	if err != nil {
		return nil, fmt.Errorf("laketest: avsc is not installed in %s (%v): run `make test-deps`", d.dir, err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != AvscVersion {
		return nil, fmt.Errorf("laketest: %s has avsc %q, want %s: run `make test-deps`", d.dir, meta.Version, AvscVersion)
	}
	in, err := json.Marshal(map[string]string{"metadata": metadataPath, "snapshot": snapshotID})
	if err != nil {
		return nil, err
	}
	stdout, err := d.run(ctx, d.iceberg, in)
	if err != nil {
		return nil, fmt.Errorf("iceberg reader %s: %w", metadataPath, err)
	}
	var s IcebergSnapshot
	if err := json.Unmarshal(stdout, &s); err != nil {
		return nil, fmt.Errorf("iceberg reader %s: decode answer: %w", metadataPath, err)
	}
	return &s, nil
}
