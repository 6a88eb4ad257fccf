package ingest

import "github.com/schedbridge/schedbridge/pipeline"

// Rules are the caller-specific facts that business validation needs.
type Rules struct {
	Active pipeline.AreaSet // the caller's portfolio's active control areas
}
