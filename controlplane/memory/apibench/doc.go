// Package apibench benchmarks memory stores end to end: a key's get and put
// through the control plane's HTTP API against a database's point read and
// single-row INSERT through the same API. See ../README.md.
package apibench
