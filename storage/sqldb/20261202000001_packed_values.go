package sqldb

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// This migration replaces the metered and profile versions' column vals_f64
// (appendValues: 8 bytes per value) by vals_packed (appendSeries: mostly
// scaled decimal varints, about half the bytes). The content hashes stay as
// they are: both forms hash appendValues' bytes. Written in Go for the same
// reason as the third migration, whose machinery it shares.
func registerPackedValues(ms *migrate.Migrations) {
	ms.MustRegister(
		func(ctx context.Context, db *bun.DB) error {
			return rewriteValues(ctx, db, valueColumn{"vals_f64", "BLOB"}, valueColumn{"vals_packed", "BLOB"}, binaryToPacked)
		},
		func(ctx context.Context, db *bun.DB) error {
			return rewriteValues(ctx, db, valueColumn{"vals_packed", "BLOB"}, valueColumn{"vals_f64", "BLOB"}, packedToBinary)
		},
	)
}

func binaryToPacked(b []byte) ([]byte, any, error) {
	vals, err := decodeValues(b)
	if err != nil {
		return nil, nil, err
	}
	return nil, appendSeries(nil, vals), nil
}

func packedToBinary(b []byte) ([]byte, any, error) {
	vals, err := decodeSeries(b)
	if err != nil {
		return nil, nil, err
	}
	return nil, appendValues(nil, vals), nil
}
