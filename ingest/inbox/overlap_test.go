package inbox

import (
	"context"
	"errors"
	"testing"

	"github.com/schedbridge/schedbridge/ingest/bulk"
	"github.com/schedbridge/schedbridge/pipeline"
)

// countingStager records the batches it stages and fails on the failAt-th.
type countingStager struct {
	Stager
	staged []string
	failAt int
}

func (s *countingStager) Metered(_ context.Context, e []pipeline.MeteredEntry) error {
	if len(s.staged)+1 == s.failAt {
		return errors.New("disk full")
	}
	s.staged = append(s.staged, e[0].Malo)
	return nil
}

func batchOf(malo string) bulk.BulkBatch {
	return bulk.BulkBatch{Metered: []pipeline.MeteredEntry{{Malo: malo}}}
}

func TestStageOverlapped(t *testing.T) {
	malos := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	tests := []struct {
		name       string
		failAt     int
		decodeErr  error
		wantErr    string
		wantStaged int
	}{
		{"all batches in order", 0, nil, "", len(malos)},
		{"staging failure stops the decoder", 2, nil, "disk full", 1},
		{"decode failure after all batches", 0, errors.New("truncated"), "truncated", len(malos)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &countingStager{failAt: tt.failAt}
			emitted, firsts := 0, 0
			err := stageOverlapped(context.Background(), st, func(ctx context.Context, emit func(bulk.BulkBatch) error) error {
				for _, m := range malos {
					if err := emit(batchOf(m)); err != nil {
						return err
					}
					emitted++
				}
				return tt.decodeErr
			}, func() { firsts++ })
			// The first staged batch is announced once, and only when it
			// was staged.
			if firsts != min(tt.wantStaged, 1) {
				t.Errorf("first staged batch announced %d times", firsts)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if len(st.staged) != tt.wantStaged {
				t.Errorf("staged %v, want %d batches", st.staged, tt.wantStaged)
			}
			for i, m := range st.staged {
				if m != malos[i] {
					t.Errorf("batch %d = %s, want %s (order)", i, m, malos[i])
				}
			}
			// The channel holds two batches, one is being staged and one
			// waits in emit: a failure stops the decoder within a few.
			if tt.failAt > 0 && emitted > tt.failAt+3 {
				t.Errorf("decoder went on for %d batches after the failure", emitted)
			}
		})
	}
}

// preparingStager is a countingStager that is also a preparer: it records
// which batches were prepared, and its writes fail on the failAt-th.
type preparingStager struct {
	countingStager
	prepared []string
}

func (s *preparingStager) PrepareMetered(e []pipeline.MeteredEntry) func(context.Context) error {
	s.prepared = append(s.prepared, e[0].Malo)
	return func(ctx context.Context) error { return s.Metered(ctx, e) }
}

func (s *preparingStager) PrepareProfiles([]pipeline.ProfileEntry) func(context.Context) error {
	panic("no profiles in this test")
}

// TestStageOverlappedPrepared: a Stager that prepares batches gets each
// batch prepared on the decoder's goroutine before it is written, the
// writes keep the file's order, and a failed write still stops the decoder.
func TestStageOverlappedPrepared(t *testing.T) {
	malos := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, failAt := range []int{0, 3} {
		st := &preparingStager{countingStager: countingStager{failAt: failAt}}
		emitted := 0
		err := stageOverlapped(context.Background(), st, func(ctx context.Context, emit func(bulk.BulkBatch) error) error {
			for _, m := range malos {
				if err := emit(batchOf(m)); err != nil {
					return err
				}
				emitted++
				// The decoder's goroutine has prepared every batch it emitted.
				if len(st.prepared) != emitted {
					t.Errorf("after %d emitted batches %d were prepared", emitted, len(st.prepared))
				}
			}
			return nil
		}, nil)
		if failAt == 0 {
			if err != nil || len(st.staged) != len(malos) {
				t.Fatalf("staged %v, %v; want all %d batches", st.staged, err, len(malos))
			}
		} else if err == nil || err.Error() != "disk full" || len(st.staged) != failAt-1 || emitted > failAt+3 {
			t.Fatalf("failAt %d: err %v, staged %v, emitted %d", failAt, err, st.staged, emitted)
		}
		for i, m := range st.staged {
			if m != malos[i] {
				t.Errorf("batch %d = %s, want %s (order)", i, m, malos[i])
			}
		}
	}
}
