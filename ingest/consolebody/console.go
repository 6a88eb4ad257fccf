package consolebody

import (
	"math"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// RunStart is the body of POST /v1/console/runs: a stage of the chain,
// kalkulation or the whole chain, for a delivery day (zero: the stage's
// default day), and for the chain the stage to start at.
type RunStart struct {
	Stage     pipeline.Stage
	Day       pipeline.Day
	FromStage pipeline.Stage
}

var (
	startStages = ingest.NewLiteral(append([]string{string(pipeline.StageChain)}, stageStrings(pipeline.AllStages)...)...)
	chainStages = ingest.NewLiteral(stageStrings(pipeline.Stages)...)
)

func stageStrings(st []pipeline.Stage) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = string(s)
	}
	return out
}

// DecodeRunStart validates the body of a console start with the problems
// of a pydantic model {stage: Literal[...], day: date | None = None,
// from_stage: Literal[...] | None = None}; from_stage belongs to the chain
// only.
func DecodeRunStart(body []byte) (RunStart, error) {
	c, obj, err := ingest.DecodeObject(body)
	if err != nil {
		return RunStart{}, err
	}
	var r RunStart
	loc := ingest.BodyPath()
	ingest.Choice(c, obj, loc, "stage", ingest.Required, startStages, &r.Stage)
	c.DateField(obj, loc, "day", ingest.Optional, &r.Day)
	if ingest.Choice(c, obj, loc, "from_stage", ingest.Optional, chainStages, &r.FromStage) &&
		r.FromStage != "" && r.Stage != "" && r.Stage != pipeline.StageChain {
		c.ValueError(loc, obj, "from_stage applies to the chain only; start the stage itself instead")
	}
	return r, c.Err()
}

// DecodeInboxRetry validates the body of POST /v1/console/inbox/retry,
// {id: int > 0}, the record id of the failed or rejected file.
func DecodeInboxRetry(body []byte) (int64, error) {
	c, obj, err := ingest.DecodeObject(body)
	if err != nil {
		return 0, err
	}
	loc := ingest.BodyPath()
	v, _ := c.Lookup(obj, loc, "id", ingest.Required)
	var id int64
	if v != nil {
		id = positiveInt(c, loc.At("id"), v)
	}
	return id, c.Err()
}

// positiveInt validates an integer > 0 as pydantic's PositiveInt does in
// strict JSON: a number without a fraction; strings, like any other kind,
// are refused.
func positiveInt(c *ingest.Checker, loc ingest.Path, v *ingest.Node) int64 {
	switch {
	case v.Kind != ingest.KindNumber:
		c.Fail(loc, "int_type", "Input should be a valid integer", v, nil)
	case v.Num != math.Trunc(v.Num) || math.IsInf(v.Num, 0) || math.Abs(v.Num) > 1<<53:
		c.Fail(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part", v, nil)
	case v.Num <= 0:
		c.Fail(loc, "greater_than", "Input should be greater than 0", v, map[string]any{"gt": 0})
	default:
		return int64(v.Num)
	}
	return 0
}
