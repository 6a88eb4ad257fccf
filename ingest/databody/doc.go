// Package databody decodes and validates the JSON bodies of the four public
// data endpoints (POST /v1/forecasts, PUT /v1/master-data, POST
// /v1/metered-data and POST /v1/profiles) into pipeline values, with
// FastAPI's problems and messages, and writes their canonical encodings,
// whose hash is the input hash.
package databody
