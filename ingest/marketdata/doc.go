// Package marketdata decodes the market data the balancing group imports:
// the partner registry of DSOs (CSV), the Zeitreihen activations (JSON or
// CSV) and the ramp-up snapshot (JSON).
package marketdata
