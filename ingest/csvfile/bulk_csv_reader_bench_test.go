package csvfile

import (
	"bytes"
	"encoding/csv"
	"io"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	zerocsv "github.com/fikrimohammad/go-zerocsv"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/tonistiigi/go-csvvalue"
)

// BenchmarkCSVReader compares the bulk path's hand-written CSV reader with
// encoding/csv and two CSV libraries from the module proxy on the same
// input: 20,000 metered-data rows of three key cells and 96 values with ';'
// and decimal comma (the shape of BenchmarkBulkCSVMetered and of the
// inbox's benchmark file). Every variant does the same work per row: it
// splits the row into its 99 cells and converts the 96 value cells into
// float64 (decimal comma read as the mark), summing them so that nothing is
// optimised away; the sum is checked against the hand-written reader's.
// The key cells and the header are split but not validated, and no variant
// hashes: the rest of the bulk path's work is the same whatever splits the
// rows.
//
// On a shared machine the wall time per op varies by a factor of two
// between runs; cpu-ms/op, the CPU time of the whole process (garbage
// collection included) per op, does not depend on what else runs, and is
// the figure to compare.
//
// Two number parsers are crossed with the readers: ParseFloat (the bulk
// path's, which reads the digits into an integer mantissa and converts
// exactly) and strconv.ParseFloat on a copy of the cell with ',' replaced
// by '.' (ParseFloat has no decimal-comma option).
func BenchmarkCSVReader(b *testing.B) {
	const rows = 20000
	data := ingesttest.MeteredCSV(ingesttest.BenchEntries(rows), ingesttest.CSVStyle{Sep: ';', DecimalComma: true, Width: 96})
	var want, wantLen float64
	{
		cr := NewReader(bytes.NewReader(data), DefaultBufferSize)
		cr.Sep = ';'
		cr.Next()
		for cr.Next() != 0 {
			for _, c := range cr.Cells[3:] {
				f, _, _ := ParseFloat(c, true, true)
				want += f
				wantLen += float64(len(c))
			}
		}
	}
	parsers := []struct {
		name  string
		parse func(scratch *[]byte, cell []byte) float64
	}{
		{"parseCSVFloat", func(_ *[]byte, cell []byte) float64 {
			f, ok, _ := ParseFloat(cell, true, true)
			if !ok {
				panic("bad cell " + string(cell))
			}
			return f
		}},
		{"strconv", func(scratch *[]byte, cell []byte) float64 {
			s := append((*scratch)[:0], cell...)
			if i := bytes.IndexByte(s, ','); i >= 0 {
				s[i] = '.'
			}
			*scratch = s
			f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(s), len(s)), 64)
			if err != nil {
				panic(err)
			}
			return f
		}},
		// split only: the cell's length stands in for its value, to show
		// the reader's own share (the sum is then checked against the
		// hand-written reader's with the same stand-in).
		{"split-only", func(_ *[]byte, cell []byte) float64 { return float64(len(cell)) }},
	}
	readers := []struct {
		name string
		// each calls row for every data row (the header skipped) with
		// its value cells.
		read func(data []byte, row func(values [][]byte)) error
	}{
		{"hand", func(data []byte, row func([][]byte)) error {
			cr := NewReader(bytes.NewReader(data), DefaultBufferSize)
			cr.Sep = ';'
			cr.Next()
			for cr.Next() != 0 {
				row(cr.Cells[3:])
			}
			return cr.Err
		}},
		{"encoding-csv", func(data []byte, row func([][]byte)) error {
			r := csv.NewReader(bytes.NewReader(data))
			r.Comma, r.ReuseRecord = ';', true
			var cells [][]byte
			if _, err := r.Read(); err != nil {
				return err
			}
			for {
				rec, err := r.Read()
				if err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				cells = cells[:0]
				for _, s := range rec[3:] {
					cells = append(cells, unsafe.Slice(unsafe.StringData(s), len(s)))
				}
				row(cells)
			}
		}},
		{"zerocsv", func(data []byte, row func([][]byte)) error {
			r := zerocsv.NewReader(bytes.NewReader(data), zerocsv.WithDelimiter(';'), zerocsv.WithBufferSize(1<<20))
			var cells [][]byte
			var bufs [96][]byte
			for {
				rec, err := r.Read()
				if err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				if rec.IsFirst() {
					continue
				}
				cells = cells[:0]
				for i := 3; i < rec.Len(); i++ {
					bufs[i-3] = rec.Bytes(i, bufs[i-3])
					cells = append(cells, bufs[i-3])
				}
				row(cells)
			}
		}},
		{"csvvalue", func(data []byte, row func([][]byte)) error {
			// go-csvvalue splits one line; the lines are cut here.
			p := csvvalue.NewParser()
			p.Comma = ';'
			var fields []string
			var cells [][]byte
			first := true
			for len(data) > 0 {
				line := data
				if i := bytes.IndexByte(data, '\n'); i >= 0 {
					line, data = data[:i], data[i+1:]
				} else {
					data = nil
				}
				var err error
				fields, err = p.Fields(unsafe.String(unsafe.SliceData(line), len(line)), fields)
				if err != nil {
					return err
				}
				if first {
					first = false
					continue
				}
				cells = cells[:0]
				for _, s := range fields[3:] {
					cells = append(cells, unsafe.Slice(unsafe.StringData(s), len(s)))
				}
				row(cells)
			}
			return nil
		}},
	}
	for _, rd := range readers {
		for _, ps := range parsers {
			b.Run(rd.name+"/"+ps.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var scratch []byte
				cpu0 := processCPU()
				for b.Loop() {
					sum := 0.0
					err := rd.read(data, func(values [][]byte) {
						for _, c := range values {
							sum += ps.parse(&scratch, c)
						}
					})
					if err != nil {
						b.Fatal(err)
					}
					if w := want; ps.name == "split-only" && sum != wantLen || ps.name != "split-only" && sum != w {
						b.Fatalf("sum %v, want %v", sum, w)
					}
				}
				b.ReportMetric(float64(rows*96)*float64(b.N)/b.Elapsed().Seconds(), "values/s")
				b.ReportMetric(float64((processCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
