// Package hr decodes the CSV files HR loads the employees' portal with: the
// employees and their compensation. A file is checked whole, so that a bad
// one changes nothing.
package hr
