package ingest

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestDecodeRunStart(t *testing.T) {
	stageOptions := `'chain', 'forecast', 'aggregate', 'open-position', 'schedules' or 'kalkulation'`
	chainOptions := `'forecast', 'aggregate', 'open-position' or 'schedules'`
	for _, tc := range []struct {
		name, body string
		want       RunStart
		problems   []problem
	}{
		{name: "chain with day", body: `{"stage":"chain","day":"2026-11-27"}`,
			want: RunStart{Stage: pipeline.StageChain, Day: pipeline.NewDay(2026, 11, 27)}},
		{name: "stage without day", body: `{"stage":"aggregate"}`, want: RunStart{Stage: pipeline.StageAggregate}},
		{name: "chain from a stage", body: `{"stage":"chain","from_stage":"schedules","day":null}`,
			want: RunStart{Stage: pipeline.StageChain, FromStage: pipeline.StageSchedules}},
		{name: "missing stage", body: `{}`, problems: []problem{{typ: "missing", loc: "body.stage", msg: "Field required", input: `{}`}}},
		{name: "unknown stage and bad day", body: `{"stage":"everything","day":"2026-13-01"}`, problems: []problem{
			{typ: "literal_error", loc: "body.stage", msg: "Input should be " + stageOptions,
				ctx: `{"expected":"` + stageOptions + `"}`, input: `"everything"`},
			{typ: "date_from_datetime_parsing", loc: "body.day",
				msg: "Input should be a valid date or datetime, month value is outside expected range of 1-12",
				ctx: `{"error":"month value is outside expected range of 1-12"}`, input: `"2026-13-01"`},
		}},
		{name: "from_stage on a stage", body: `{"stage":"forecast","from_stage":"aggregate"}`, problems: []problem{
			{typ: "value_error", loc: "body", msg: "Value error, from_stage applies to the chain only; start the stage itself instead",
				ctx: `{"error":{}}`},
		}},
		{name: "kalkulation is no stage of the chain", body: `{"stage":"chain","from_stage":"kalkulation"}`, problems: []problem{
			{typ: "literal_error", loc: "body.from_stage", msg: "Input should be " + chainOptions,
				ctx: `{"expected":"` + chainOptions + `"}`, input: `"kalkulation"`},
		}},
		{name: "not an object", body: `[1]`, problems: []problem{
			{typ: "model_attributes_type", loc: "body", msg: "Input should be a valid dictionary or object to extract fields from", input: `[1]`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRunStart([]byte(tc.body))
			if tc.problems != nil {
				checkProblems(t, err, tc.problems)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestDecodeInboxRetry(t *testing.T) {
	for _, tc := range []struct {
		body     string
		want     int64
		problems []problem
	}{
		{body: `{"id":42}`, want: 42},
		{body: `{"id":0}`, problems: []problem{{typ: "greater_than", loc: "body.id", msg: "Input should be greater than 0", ctx: `{"gt":0}`, input: `0`}}},
		{body: `{"id":"42"}`, problems: []problem{{typ: "int_type", loc: "body.id", msg: "Input should be a valid integer", input: `"42"`}}},
		{body: `{"id":1.5}`, problems: []problem{{typ: "int_from_float", loc: "body.id",
			msg: "Input should be a valid integer, got a number with a fractional part", input: `1.5`}}},
		{body: `{}`, problems: []problem{{typ: "missing", loc: "body.id", msg: "Field required", input: `{}`}}},
	} {
		t.Run(tc.body, func(t *testing.T) {
			got, err := DecodeInboxRetry([]byte(tc.body))
			if tc.problems != nil {
				checkProblems(t, err, tc.problems)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
