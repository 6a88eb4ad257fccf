// Package csvfile reads the CSV files that suppliers, HR and operators drop:
// the separator taken from the header line, quoting as in RFC 4180, a
// decimal comma with ';', spreadsheet habits (BOM, trailing separators,
// blank rows) and the line of every row, for the problems. Rows without
// quotes are split straight from the read buffer.
package csvfile
