// Package bulk decodes and validates the bulk files of the inbox (metered
// data, load profiles, master data, forecasts and trades as JSON, CSV or
// Parquet, optionally gzip'd) with the API's rules and messages, streaming
// large files in batches. A file gives the same entries and input hash as
// the API body of the same content, which is why it uses the models of
// databody and tradeset. The formats are described in docs/formats.md.
package bulk
