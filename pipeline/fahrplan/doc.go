// Package fahrplan writes the balancing group's schedules (Fahrplaene, TPS) to
// the German TSOs in ESS 2.3 XML and reads the TSOs' answers in ESS and CIM
// (IEC 62325-451): acknowledgements (ACK), anomaly reports (ANO) and
// confirmation reports (CNF).
//
// The written document follows the German TPS in testdata/reference element for
// element: DOCTYPE schedule-xml.dtd, DtdVersion 2 / DtdRelease 3, values in v=
// attributes, codingScheme A01 on identifications, one Period per series with
// resolution PT15M and positions 1..N counted from the UTC start of the
// delivery day (92, 96 or 100 of them), quantities in MW with three decimals.
//
// The package does no I/O: callers hand in bytes and get bytes back.
package fahrplan
