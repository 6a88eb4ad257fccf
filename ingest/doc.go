// Package ingest holds what every decoder of submissions shares: the
// streaming JSON reader, the numbers, the pydantic-compatible checks and
// their messages, the problem lists with their caps, and the canonical JSON
// writer with its input hash. The decoders themselves live in one
// sub-package per concept:
//
//   - databody: the JSON bodies of the four data endpoints (forecasts,
//     master data, metered data, load profiles) and their canonical forms.
//   - tradeset: the trades body of PUT /v1/process/trades and the bulk
//     trades document.
//   - consolebody: the operators' console bodies (run start, inbox retry).
//   - csvfile: the CSV reader that the file decoders share (separator,
//     decimal comma, quoting, line numbers).
//   - bulk: the bulk files of the inbox, by format (JSON, CSV, Parquet).
//   - hr: the HR CSV imports of the employees' portal.
//   - marketdata: the partner registry, the series activations and the
//     ramp-up snapshot.
//   - prices: SMARD spot prices and netztransparenz reBAP.
//   - edifact, mail: market communication's EDIFACT messages and mails.
//   - inbox: the bucket watcher that stages bulk files.
//   - ingesttest: helpers for the decoders' tests.
//
// Sub-packages import the root and not each other, except where a concept
// builds on another: bulk decodes the same entries as databody and tradeset
// and must give the same problems and input hashes, so it uses their
// models; bulk, hr and marketdata read their CSV files with csvfile; inbox
// stages what bulk decodes.
//
// The service replaces an earlier FastAPI implementation whose clients parse
// its 422 bodies, so the errors reproduce FastAPI + pydantic v2: a schema
// failure is a list of problems with pydantic's type, loc, msg, input and
// ctx; a business failure (wrong interval count, inactive control area,
// duplicates, …) is a list of messages that is only checked once the schema
// has passed.
//
// Bodies are parsed by a small JSON scanner of our own rather than by
// encoding/json. It reports malformed JSON with the message and character
// position of Python's json module, which FastAPI puts into its json_invalid
// problem, and it keeps arrays of numbers as []float64 without a node per
// number, which is what makes a metered-data body of 10,000 days fast to
// accept.
//
// Every accepted submission also gets a canonical JSON encoding and its
// SHA-256, the input_hash that identifies the request in the audit trail:
// equal content gives an equal hash however the client formatted it.
package ingest
