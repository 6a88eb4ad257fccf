// Package pipeline is the domain of schedbridge: delivery days in Europe/Berlin,
// control areas, units, market locations and the series that suppliers submit.
//
// It is the core that every adapter points at. It imports no HTTP framework, no
// database mapper and no object-store client, so that the same rules hold whether a
// submission arrives through the API or as a file in the bucket.
package pipeline
