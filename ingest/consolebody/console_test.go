package consolebody

import (
	"testing"

	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// problem is an expected schema problem (see ingesttest.Want).
type problem ingesttest.Want

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
		{name: "missing stage", body: `{}`, problems: []problem{{Type: "missing", Loc: "body.stage", Msg: "Field required", Input: `{}`}}},
		{name: "unknown stage and bad day", body: `{"stage":"everything","day":"2026-13-01"}`, problems: []problem{
			{Type: "literal_error", Loc: "body.stage", Msg: "Input should be " + stageOptions,
				Ctx: `{"expected":"` + stageOptions + `"}`, Input: `"everything"`},
			{Type: "date_from_datetime_parsing", Loc: "body.day",
				Msg: "Input should be a valid date or datetime, month value is outside expected range of 1-12",
				Ctx: `{"error":"month value is outside expected range of 1-12"}`, Input: `"2026-13-01"`},
		}},
		{name: "from_stage on a stage", body: `{"stage":"forecast","from_stage":"aggregate"}`, problems: []problem{
			{Type: "value_error", Loc: "body", Msg: "Value error, from_stage applies to the chain only; start the stage itself instead",
				Ctx: `{"error":{}}`},
		}},
		{name: "kalkulation is no stage of the chain", body: `{"stage":"chain","from_stage":"kalkulation"}`, problems: []problem{
			{Type: "literal_error", Loc: "body.from_stage", Msg: "Input should be " + chainOptions,
				Ctx: `{"expected":"` + chainOptions + `"}`, Input: `"kalkulation"`},
		}},
		{name: "not an object", body: `[1]`, problems: []problem{
			{Type: "model_attributes_type", Loc: "body", Msg: "Input should be a valid dictionary or object to extract fields from", Input: `[1]`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRunStart([]byte(tc.body))
			if tc.problems != nil {
				ingesttest.CheckProblems(t, err, tc.problems)
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
		{body: `{"id":0}`, problems: []problem{{Type: "greater_than", Loc: "body.id", Msg: "Input should be greater than 0", Ctx: `{"gt":0}`, Input: `0`}}},
		{body: `{"id":"42"}`, problems: []problem{{Type: "int_type", Loc: "body.id", Msg: "Input should be a valid integer", Input: `"42"`}}},
		{body: `{"id":1.5}`, problems: []problem{{Type: "int_from_float", Loc: "body.id",
			Msg: "Input should be a valid integer, got a number with a fractional part", Input: `1.5`}}},
		{body: `{}`, problems: []problem{{Type: "missing", Loc: "body.id", Msg: "Field required", Input: `{}`}}},
	} {
		t.Run(tc.body, func(t *testing.T) {
			got, err := DecodeInboxRetry([]byte(tc.body))
			if tc.problems != nil {
				ingesttest.CheckProblems(t, err, tc.problems)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
