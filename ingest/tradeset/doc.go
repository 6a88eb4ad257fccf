// Package tradeset decodes and validates a portfolio's trade set for one
// delivery day: the body of PUT /v1/process/trades, and the trades document
// of a bulk file, which names its day itself.
package tradeset
