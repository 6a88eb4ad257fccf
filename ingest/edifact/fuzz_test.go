package edifact

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

// FuzzParse feeds garbage and mutated samples to Parse: it must not panic,
// must fail only with a pipeline.Invalid error, and what it accepts must
// hold the envelope invariants it checked. Plain go test runs the seeds
// only; go test -fuzz=FuzzParse -fuzztime=20s explores further.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("testdata", "golden")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.edi"))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("UNA"))
	f.Add([]byte("UNA:+.? 'UNB+UNOC:3'?"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ic, err := Parse(data)
		if err != nil {
			if pipeline.KindOf(err) != pipeline.Invalid {
				t.Fatalf("error of kind %s: %v", pipeline.KindOf(err), err)
			}
			return
		}
		if ic.Ref == "" || ic.Sender == "" || ic.Receiver == "" {
			t.Fatalf("accepted an interchange without reference or parties: %+v", ic)
		}
		for _, m := range ic.Messages {
			if m.SegmentCount < 2 || m.Ref == "" || m.Type == "" {
				t.Fatalf("accepted message %+v", m)
			}
		}
	})
}
