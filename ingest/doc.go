// Package ingest decodes and validates the JSON bodies of the four public data
// endpoints (forecasts, master data, metered data, load profiles) into pipeline
// values.
//
// The service replaces an earlier FastAPI implementation whose clients parse its
// 422 bodies, so the errors reproduce FastAPI + pydantic v2: a schema failure is
// a list of problems with pydantic's type, loc, msg, input and ctx; a business
// failure (wrong interval count, inactive control area, duplicates, …) is a list
// of messages that is only checked once the schema has passed.
//
// Bodies are parsed by a small JSON scanner of our own rather than by
// encoding/json. It reports malformed JSON with the message and character
// position of Python's json module, which FastAPI puts into its json_invalid
// problem, and it keeps arrays of numbers as []float64 without a node per
// number, which is what makes a metered-data body of 10,000 days fast to accept.
//
// Every accepted submission also gets a canonical JSON encoding and its SHA-256,
// the input_hash that identifies the request in the audit trail: equal content
// gives an equal hash however the client formatted it.
package ingest
