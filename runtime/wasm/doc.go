// Package wasm runs functions: WebAssembly (WASI preview 1) modules executed
// by wazero, one fresh instance per request, under a time limit and a memory
// limit, with the deployment's pinned variables.
//
// The contract a function implements is CGI over WASI (RFC 3875, the same
// shape as WAGI): the request arrives as CGI meta-variables in the
// environment (REQUEST_METHOD, PATH_INFO, QUERY_STRING, HTTP_*, ...) with the
// body on stdin; the function writes CGI response headers ("Status: 404",
// "Content-Type: ..."), a blank line and the body to stdout. Stderr lines go
// to the deployment's log. A module is compiled once when its deployment is
// loaded and the compiled code is cached (in memory, and on disk when
// Config.CacheDir is set), so a request only instantiates it. What an
// instantiation costs the host is kept to the module's own work: Load merges
// the module's data segments (datasegs.go), linear memory is an off-heap
// reservation reused zeroed from call to call (memory.go), and the host
// serves the call's environment itself (env.go).
package wasm
