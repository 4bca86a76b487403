// Package apibench benchmarks database queries end to end: point SELECT and
// single-row INSERT requests through the control plane's HTTP API against
// the same statements on the SQLite driver directly. See README.md.
package apibench
