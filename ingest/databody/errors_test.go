package databody

import (
	"errors"
	"fmt"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// kinded is how the API asks an error for its status class.
type kinded interface{ Kind() pipeline.ErrorKind }

var (
	_ kinded = (*ingest.SchemaError)(nil)
	_ kinded = (*ingest.BusinessError)(nil)
)

// TestErrorsAs: callers find both error types through wrapping, and the
// texts name the first failure.
func TestErrorsAs(t *testing.T) {
	_, err := DecodeForecast([]byte(`{"series":[]}`), ingesttest.AllAreas)
	var se *ingest.SchemaError
	if !errors.As(fmt.Errorf("decode: %w", err), &se) || len(se.Problems) != 2 {
		t.Fatalf("errors.As(SchemaError) failed for %v", err)
	}
	if want := "invalid request body: body.delivery_day: Field required (and 1 more)"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if k := err.(kinded).Kind(); k != pipeline.Invalid {
		t.Errorf("Kind() = %s", k)
	}

	_, err = DecodeForecast([]byte(ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","values":[1]}`)), ingesttest.AllAreas)
	var be *ingest.BusinessError
	if !errors.As(fmt.Errorf("decode: %w", err), &be) || be.Total != 1 {
		t.Fatalf("errors.As(BusinessError) failed for %v", err)
	}
	if want := "series[0] has 1 intervals, expected 96 for 2026-03-28"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if k := err.(kinded).Kind(); k != pipeline.Invalid {
		t.Errorf("Kind() = %s", k)
	}
}
