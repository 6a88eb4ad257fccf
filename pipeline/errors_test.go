package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

// A cancellation is the caller's failure only when the caller's context is
// done; every other error keeps its kind.
func TestAttribute(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	canceled := fmt.Errorf("stage forecast_versions for p1: %w", context.Canceled)
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want pipeline.ErrorKind
	}{
		{"cancellation, caller gone", gone, canceled, pipeline.Canceled},
		{"cancellation named unavailable, caller gone", gone, &pipeline.Error{Kind: pipeline.Unavailable, Message: "busy", Err: canceled}, pipeline.Canceled},
		{"cancellation, caller still there", live, canceled, pipeline.Internal},
		{"server's own deadline, caller gone", gone, fmt.Errorf("query: %w", context.DeadlineExceeded), pipeline.Internal},
		{"other error, caller gone", gone, pipeline.Errorf(pipeline.Invalid, "bad"), pipeline.Invalid},
		{"other error, caller still there", live, errors.New("disk full"), pipeline.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pipeline.Attribute(tt.ctx, tt.err)
			if k := pipeline.KindOf(got); k != tt.want {
				t.Errorf("kind %s, want %s", k, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("%v does not wrap %v", got, tt.err)
			}
			if tt.want == pipeline.Canceled && pipeline.MessageOf(got) != "client closed request" {
				t.Errorf("message %q", pipeline.MessageOf(got))
			}
		})
	}
	if pipeline.Attribute(gone, nil) != nil {
		t.Error("no error became one")
	}
}
