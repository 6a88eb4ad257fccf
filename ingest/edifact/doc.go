// Package edifact reads the EDIFACT interchanges of the German electricity
// market communication into the domain types of pipeline/mako and writes the
// two interchanges the service sends itself: our PARTIN (communication data,
// Pruefidentifikator 37000 as supplier or 37003 as BKV) and the
// Zuordnungsermaechtigung (UTILMD, Pruefidentifikator 55071).
//
// Parse is a single pass over the bytes. It does not build a tree of
// segments: it finds each segment terminator with bytes.IndexByte, decides
// from the three-letter tag whether the segment matters (service segments,
// BGM, DTM, RFF, NAD and the acknowledgment segments), and only then cuts the
// elements it needs and unescapes them. Everything else (the hundreds of
// SEQ/CCI/QTY segments of a large UTILMD or MSCONS) is only counted for the
// UNT check. That keeps parsing far above the 50 MB/s the sync needs.
//
// Segment numbers in error messages count from the UNB as segment 1; the UNA
// service string advice is not a segment.
package edifact
