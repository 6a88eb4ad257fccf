package kalkulation

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestPeriod(t *testing.T) {
	von, bis := DefaultPeriod(pipeline.NewDay(2026, 11, 1))
	if von != pipeline.NewDay(2026, 10, 1) || bis != pipeline.NewDay(2026, 10, 31) {
		t.Fatalf("default period on 1 Nov: %s..%s, want October", von, bis)
	}
	for _, tc := range []struct {
		von, bis pipeline.Day
		ok       bool
	}{
		{pipeline.NewDay(2026, 10, 1), pipeline.NewDay(2026, 10, 31), true}, // 31 days
		{pipeline.NewDay(2026, 10, 1), pipeline.NewDay(2026, 11, 1), false}, // 32 days
		{pipeline.NewDay(2026, 10, 5), pipeline.NewDay(2026, 10, 5), true},  // one day
		{pipeline.NewDay(2026, 10, 5), pipeline.NewDay(2026, 10, 4), false}, // reversed
		{pipeline.NewDay(2026, 3, 15), pipeline.NewDay(2026, 4, 14), true},  // 31 days over the DST switch
	} {
		err := CheckPeriod(tc.von, tc.bis)
		if (err == nil) != tc.ok {
			t.Errorf("CheckPeriod(%s, %s) = %v, want ok=%v", tc.von, tc.bis, err, tc.ok)
		}
		if err != nil && pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("CheckPeriod(%s, %s): kind %v, want Invalid", tc.von, tc.bis, pipeline.KindOf(err))
		}
	}
}
