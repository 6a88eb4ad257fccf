package sqldb

import (
	"context"
	"encoding/json"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// The third migration replaces the JSON text column vals of the metered and
// profile versions by vals_f64, the binary form of appendValues, and
// recomputes their content hashes over it. It is written in Go because
// neither SQL dialect can turn a JSON array into IEEE 754 bytes. The file
// name carries the migration's name (bun reads it from the caller's file).
func registerBinaryValues(ms *migrate.Migrations) {
	ms.MustRegister(
		func(ctx context.Context, db *bun.DB) error {
			return rewriteValues(ctx, db, valueColumn{"vals", "TEXT"}, valueColumn{"vals_f64", "BLOB"}, jsonToBinary)
		},
		func(ctx context.Context, db *bun.DB) error {
			return rewriteValues(ctx, db, valueColumn{"vals_f64", "BLOB"}, valueColumn{"vals", "TEXT"}, binaryToJSON)
		},
	)
}

// jsonToBinary turns a JSON array of numbers into appendValues' bytes, which
// the content hash then covers.
func jsonToBinary(b []byte) ([]byte, any, error) {
	var vals []float64
	if err := json.Unmarshal(b, &vals); err != nil {
		return nil, nil, err
	}
	out := appendValues(nil, vals)
	return out, out, nil
}

// binaryToJSON is the inverse of jsonToBinary; the hash then covers the
// JSON text.
func binaryToJSON(b []byte) ([]byte, any, error) {
	vals, err := decodeValues(b)
	if err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(vals)
	return out, string(out), err
}
