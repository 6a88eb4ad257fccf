package sqldb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The quarter-hour values of the metered and profile versions are stored in
// the column vals_packed, in one of two forms that its first byte names:
//
//   - seriesDecimal: a scale s (one byte), the number of values (uvarint),
//     then each value times 10^s as an integer, as the zigzag varint of its
//     difference to the one before. Suppliers send decimal text with a few
//     places (kWh with three, MW with up to six), so almost every series has
//     such a scale, and a smooth load curve has small differences: the
//     inbox benchmark's random values of up to seven digits take 4 bytes
//     each instead of 8, and real curves fewer.
//   - seriesRaw: little-endian IEEE 754 doubles (appendValues), for a series
//     that has no exact decimal scale up to maxSeriesScale.
//
// Both forms give back every value bit for bit: a series is stored in the
// decimal form only when each value divided back from its integer is the
// same double (a division by a power of ten is correctly rounded, so the
// integer's quotient is the double nearest the decimal it came from). The
// form is chosen for size only; the content hash is always taken over
// appendValues' bytes, so equal values compare equal whatever form holds
// them. Halving the bytes of a row cut the staging time of a bulk file by a
// third on SQLite and a quarter on PostgreSQL (BenchmarkBulkStageMetered
// 1.22 -> 0.82 s and 1.39 -> 1.04 s, docs/benchmarks.md, issue 20): both
// write every byte to their log and then to the table.
const (
	seriesRaw     byte = 0
	seriesDecimal byte = 1
)

// maxSeriesScale is the most decimal places the decimal form keeps; an
// integer of a value times 10^maxSeriesScale must also stay below 2^53.
const maxSeriesScale = 9

var pow10 = [maxSeriesScale + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// appendSeries appends the stored form of vals to buf. Negative zero is
// stored as zero, as in appendValues.
//
// It writes the decimal form at the scale the first values need and, when
// a later value needs more places, starts again at the scale that value
// needs: every value is checked at the scale it is stored with, and a day's
// scale is almost always settled by its first value.
func appendSeries(buf []byte, vals []float64) []byte {
	start := len(buf)
	s := 0
	for {
		buf = append(buf[:start], seriesDecimal, byte(s))
		buf = binary.AppendUvarint(buf, uint64(len(vals)))
		prev, failed := int64(0), -1
		for i, v := range vals {
			x, ok := scaled(v, s)
			if !ok {
				failed = i
				break
			}
			buf = binary.AppendVarint(buf, int64(x)-prev)
			prev = int64(x)
		}
		if failed < 0 {
			return buf
		}
		for s++; s <= maxSeriesScale; s++ {
			if _, ok := scaled(vals[failed], s); ok {
				break
			}
		}
		if s > maxSeriesScale {
			return appendValues(append(buf[:start], seriesRaw), vals)
		}
	}
}

// scaled returns v times 10^s rounded to an integer, and whether that
// integer is below 2^53 and divides back to v exactly. It rounds half to
// even, one instruction on amd64 where math.Round is a dozen (a third of the
// encoding time); a product that ends in a half is no exact decimal at this
// scale either way.
func scaled(v float64, s int) (float64, bool) {
	x := math.RoundToEven(v * pow10[s])
	return x, math.Abs(x) < 1<<53 && x/pow10[s] == v
}

// seriesLen returns the number of values a stored series holds.
func seriesLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errors.New("stored values are empty")
	}
	switch b[0] {
	case seriesRaw:
		if (len(b)-1)%8 != 0 {
			return 0, fmt.Errorf("stored values of %d bytes are not a whole number of doubles", len(b)-1)
		}
		return (len(b) - 1) / 8, nil
	case seriesDecimal:
		if len(b) < 2 || int(b[1]) > maxSeriesScale {
			return 0, errors.New("stored decimal values have no valid scale")
		}
		n, k := binary.Uvarint(b[2:])
		if k <= 0 || n > uint64(len(b)) {
			return 0, errors.New("stored decimal values have no valid count")
		}
		return int(n), nil
	}
	return 0, fmt.Errorf("stored values of unknown form %d", b[0])
}

// decodeSeries is the inverse of appendSeries.
func decodeSeries(b []byte) ([]float64, error) {
	n, err := seriesLen(b)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	return out, decodeSeriesInto(out, b)
}

// decodeSeriesInto decodes b, which holds len(dst) values (seriesLen), into
// dst.
func decodeSeriesInto(dst []float64, b []byte) error {
	if b[0] == seriesRaw {
		decodeValuesInto(dst, b[1:])
		return nil
	}
	scale := pow10[b[1]]
	_, k := binary.Uvarint(b[2:])
	rest := b[2+k:]
	n := int64(0)
	for i := range dst {
		d, k := binary.Varint(rest)
		if k <= 0 {
			return fmt.Errorf("stored decimal values end after %d of %d", i, len(dst))
		}
		rest = rest[k:]
		n += d
		dst[i] = float64(n) / scale
	}
	if len(rest) != 0 {
		return fmt.Errorf("stored decimal values have %d bytes after the last value", len(rest))
	}
	return nil
}
