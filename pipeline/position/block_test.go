package position_test

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/position"
)

// blockOf builds the Block of rows as a Parquet scan delivers it: every
// string column as runs over a dictionary in order of first appearance;
// split cuts every run in two where it is longer than one row, so that
// adjacent runs with the same value are covered too.
func blockOf(rows []fmRow, split bool) position.Block {
	b := position.Block{Rows: len(rows)}
	col := func(value func(fmRow) string) position.Runs {
		var r position.Runs
		codes := map[string]int32{}
		for i, row := range rows {
			v := value(row)
			c, ok := codes[v]
			if !ok {
				c = int32(len(r.Dict))
				codes[v] = c
				r.Dict = append(r.Dict, v)
			}
			if k := len(r.Codes) - 1; k >= 0 && r.Codes[k] == c && !(split && i%2 == 0) {
				r.Ends[k] = int32(i + 1)
				continue
			}
			r.Codes = append(r.Codes, c)
			r.Ends = append(r.Ends, int32(i+1))
		}
		return r
	}
	b.Portfolio = col(func(r fmRow) string { return r.portfolio })
	b.ControlArea = col(func(r fmRow) string { return r.area })
	b.Kind = col(func(r fmRow) string { return r.kind })
	b.Source = col(func(r fmRow) string { return r.source })
	for _, r := range rows {
		b.QH = append(b.QH, int32(r.qh))
		b.PowerMW = append(b.PowerMW, r.mw)
	}
	return b
}

// TestAddBlockSameAsAdd adds the same rows as records and as blocks and
// compares the positions bit for bit: values that are not exact in float64,
// several portfolios and areas, submitted rows left out, runs split.
func TestAddBlockSameAsAdd(t *testing.T) {
	var batches [][]fmRow
	for b := range 3 {
		var rows []fmRow
		for loc := range 40 {
			p := []string{"p2", "p1", "p3"}[(loc+b)%3]
			area := pipeline.ControlAreas[(loc/3)%4]
			kind := []pipeline.Kind{pipeline.Consumption, pipeline.Production}[loc%5/4]
			source := []string{pipeline.SourceHistory, pipeline.SourceBDEWProfile, pipeline.SourceSubmitted, pipeline.SourceDSOProfile}[loc%4]
			rows = append(rows, series(p, "m", area, kind, source, 96, func(q int) float64 { return math.Sqrt(float64(loc*97+q+b)) / 7 })...)
		}
		batches = append(batches, rows)
	}
	for _, split := range []bool{false, true} {
		mem := checked(t)
		viaAdd, viaBlock := position.NewAggregator(normalDay), position.NewAggregator(normalDay)
		for _, rows := range batches {
			rec := forecastBatch(t, mem, normalDay, rows)
			err := viaAdd.Add(rec)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			if err := viaBlock.AddBlock(blockOf(rows, split)); err != nil {
				t.Fatal(err)
			}
		}
		if viaAdd.SubmittedRows() != viaBlock.SubmittedRows() || viaAdd.SubmittedRows() == 0 {
			t.Errorf("submitted rows %d via Add, %d via AddBlock", viaAdd.SubmittedRows(), viaBlock.SubmittedRows())
		}
		a, err := viaAdd.Positions(mem, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := viaBlock.Positions(mem, nil)
		if err != nil {
			t.Fatal(err)
		}
		ra, rb := position.PositionRows(a), position.PositionRows(b)
		if len(ra) != 3*4*96 || len(ra) != len(rb) {
			t.Fatalf("%d position rows via Add, %d via AddBlock", len(ra), len(rb))
		}
		for i := range ra {
			if ra[i] != rb[i] {
				t.Fatalf("split %v, row %d: %+v via Add, %+v via AddBlock", split, i, ra[i], rb[i])
			}
		}
		if !array.RecordEqual(a, b) {
			t.Errorf("split %v: the records differ", split)
		}
		a.Release()
		b.Release()
	}
}

// TestAddBlockInvalid: the rows TestAddInvalid rejects, and blocks whose
// shape is wrong.
func TestAddBlockInvalid(t *testing.T) {
	ok := series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 96, constant(1))
	rows := func(mod func(r *fmRow)) []fmRow {
		out := append([]fmRow(nil), ok...)
		mod(&out[50])
		return out
	}
	cases := []struct {
		name, msg string
		block     position.Block
	}{
		{"qh beyond the day", "qh_index 96", blockOf(rows(func(r *fmRow) { r.qh = 96 }), false)},
		{"negative qh", "qh_index -1", blockOf(rows(func(r *fmRow) { r.qh = -1 }), false)},
		{"unknown control area", `row 50: control_area "tennet"`, blockOf(rows(func(r *fmRow) { r.area = "tennet" }), false)},
		{"unknown kind", `row 50: kind "storage"`, blockOf(rows(func(r *fmRow) { r.kind = "storage" }), false)},
		{"unknown source", `row 50: source "guess"`, blockOf(rows(func(r *fmRow) { r.source = "guess" }), false)},
		{"empty portfolio", `row 50: portfolio ""`, blockOf(rows(func(r *fmRow) { r.portfolio = "" }), false)},
		{"short power", "power_mw", func() position.Block { b := blockOf(ok, false); b.PowerMW = b.PowerMW[:95]; return b }()},
		{"runs short", "runs do not cover", func() position.Block { b := blockOf(ok, false); b.Kind.Ends[0] = 95; return b }()},
		{"runs fall", "do not rise", func() position.Block {
			b := blockOf(ok, true)
			b.Source.Ends[1], b.Source.Ends[2] = b.Source.Ends[2], b.Source.Ends[1]
			return b
		}()},
		{"code beyond the dictionary", "code 3", func() position.Block { b := blockOf(ok, false); b.ControlArea.Codes[0] = 3; return b }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := position.NewAggregator(normalDay).AddBlock(tc.block)
			if pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want invalid with %q", err, tc.msg)
			}
		})
	}
}
