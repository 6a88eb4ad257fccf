package ingest

import (
	"math"

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
	startStages = newLiteral(append([]string{string(pipeline.StageChain)}, stageStrings(pipeline.AllStages)...)...)
	chainStages = newLiteral(stageStrings(pipeline.Stages)...)
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
	c, obj, err := decodeObject(body)
	if err != nil {
		return RunStart{}, err
	}
	var r RunStart
	loc := bodyPath()
	choice(c, obj, loc, "stage", required, startStages, &r.Stage)
	c.dateField(obj, loc, "day", optional, &r.Day)
	if choice(c, obj, loc, "from_stage", optional, chainStages, &r.FromStage) &&
		r.FromStage != "" && r.Stage != "" && r.Stage != pipeline.StageChain {
		c.valueError(loc, obj, "from_stage applies to the chain only; start the stage itself instead")
	}
	return r, c.err()
}

// DecodeInboxRetry validates the body of POST /v1/console/inbox/retry,
// {id: int > 0}, the record id of the failed or rejected file.
func DecodeInboxRetry(body []byte) (int64, error) {
	c, obj, err := decodeObject(body)
	if err != nil {
		return 0, err
	}
	loc := bodyPath()
	v, _ := c.lookup(obj, loc, "id", required)
	var id int64
	if v != nil {
		id = positiveInt(c, loc.at("id"), v)
	}
	return id, c.err()
}

// positiveInt validates an integer > 0 as pydantic's PositiveInt does in
// strict JSON: a number without a fraction; strings, like any other kind,
// are refused.
func positiveInt(c *checker, loc path, v *node) int64 {
	switch {
	case v.kind != kindNumber:
		c.fail(loc, "int_type", "Input should be a valid integer", v, nil)
	case v.num != math.Trunc(v.num) || math.IsInf(v.num, 0) || math.Abs(v.num) > 1<<53:
		c.fail(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part", v, nil)
	case v.num <= 0:
		c.fail(loc, "greater_than", "Input should be greater than 0", v, map[string]any{"gt": 0})
	default:
		return int64(v.num)
	}
	return 0
}
