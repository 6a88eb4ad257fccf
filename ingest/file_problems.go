package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedbridge/schedbridge/pipeline"
)

// FileProblem is one error of a file, in the API's vocabulary plus where in
// the file it is.
type FileProblem struct {
	Line   int            `json:"line,omitempty"`   // 1-based physical line (CSV: the header is line 1); 0 when unknown
	Column string         `json:"column,omitempty"` // CSV column name / Parquet column
	Row    int            `json:"row,omitempty"`    // Parquet: 1-based row
	Type   string         `json:"type"`
	Loc    []any          `json:"loc,omitempty"` // as the API would report it, e.g. ["body","entries",12,"malo"]
	Msg    string         `json:"msg"`
	Input  any            `json:"input,omitempty"`
	Ctx    map[string]any `json:"ctx,omitempty"`
}

// Problem types of bulk files that the API does not have (see docs/formats.md).
const (
	// ProblemBusiness is a business rule of the API (interval count,
	// duplicates, inactive control area, ...); Msg is the API's message,
	// with CSV lines or Parquet rows in place of entry indices.
	ProblemBusiness = "business"
	// ProblemFileTooLarge: a document read whole exceeds MaxDocumentBytes, or
	// one JSON entry exceeds 1 MiB.
	ProblemFileTooLarge = "file_too_large"
	// ProblemGzip: a .gz file whose content is not valid gzip data.
	ProblemGzip = "gzip_invalid"
	// ProblemCSVHeader: a missing or unusable CSV header line.
	ProblemCSVHeader = "csv_header"
	// ProblemCSVCells: a CSV row with more cells than the header, or too few
	// for its key columns.
	ProblemCSVCells = "csv_cell_count"
	// ProblemCSVConflict: a forecast or trades CSV row that contradicts an
	// earlier one: another delivery_day (a file holds one forecast, or the
	// trades of one day), or another control area for the same MaLo (its one
	// malo_mapping entry).
	ProblemCSVConflict = "csv_conflict"
	// ProblemCSVSyntax: a quoting error or an over-long CSV row.
	ProblemCSVSyntax = "csv_syntax"
	// ProblemParquet: a file that is not readable Parquet.
	ProblemParquet = "parquet_invalid"
	// ProblemParquetSchema: a missing or mistyped Parquet column.
	ProblemParquetSchema = "parquet_schema"
)

// FileError is returned when the file is invalid; Problems as in BulkResult.
type FileError struct {
	Problems []FileProblem
	Count    int
}

// Error summarises the first problem.
func (e *FileError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid file"
	}
	p := e.Problems[0]
	var where []string
	if p.Line > 0 {
		where = append(where, "line "+strconv.Itoa(p.Line))
	}
	if p.Row > 0 {
		where = append(where, "row "+strconv.Itoa(p.Row))
	}
	if p.Column != "" {
		where = append(where, "column "+p.Column)
	}
	s := "invalid file: "
	if len(where) > 0 {
		s += strings.Join(where, ", ") + ": "
	}
	s += p.Msg
	if e.Count > 1 {
		s += fmt.Sprintf(" (and %d more)", e.Count-1)
	}
	return s
}

// Kind classifies the error for the API's status table.
func (e *FileError) Kind() pipeline.ErrorKind { return pipeline.Invalid }

// listNames are the list fields of the four models: a loc element after one
// of them is an index, rendered as a number as FastAPI does.
var listNames = map[string]bool{
	"entries": true, "values": true, "values_kwh": true, "series": true, "locations": true, "slices": true,
	"trades": true,
}

// FileProblemOf converts an API problem; the location in the file is set by
// the caller.
func FileProblemOf(p Problem) FileProblem {
	loc := make([]any, len(p.Loc))
	for i, s := range p.Loc {
		loc[i] = s
		if i > 0 && listNames[p.Loc[i-1]] {
			if n, err := strconv.Atoi(s); err == nil {
				loc[i] = n
			}
		}
	}
	fp := FileProblem{Type: p.Type, Loc: loc, Msg: p.Msg, Input: p.Input}
	if len(p.Ctx) > 0 {
		fp.Ctx = p.Ctx
	}
	return fp
}
