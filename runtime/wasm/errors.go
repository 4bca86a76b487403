package wasm

import "errors"

// Errors a Call or Load returns; the edge maps them to statuses (see the
// README): ErrTimeout 504, ErrRequestTooLarge 413, ErrProjectBusy 429,
// ErrBusy 503, ErrNotLoaded 404 (or 503 while a deploy loads), the others
// 502.
var (
	// ErrNotLoaded: no function is loaded under that deployment id.
	ErrNotLoaded = errors.New("wasm: function not loaded")
	// ErrInvalidModule: the bytes are not a WASI command module wazero can compile.
	ErrInvalidModule = errors.New("wasm: invalid module")
	// ErrTimeout: the function ran past its time limit and was stopped.
	ErrTimeout = errors.New("wasm: function timed out")
	// ErrFailed: the function trapped (for example at its memory limit) or
	// exited with a non-zero status.
	ErrFailed = errors.New("wasm: function failed")
	// ErrBadResponse: the function's stdout is not a CGI response.
	ErrBadResponse = errors.New("wasm: malformed function response")
	// ErrResponseTooLarge: the function wrote more than Config.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("wasm: function response too large")
	// ErrRequestTooLarge: the request body exceeds Config.MaxRequestBytes.
	ErrRequestTooLarge = errors.New("wasm: request body too large")
	// ErrBusy: Config.MaxConcurrent calls were running for as long as the
	// call waited (Config.QueueTimeout, or until its context ended).
	ErrBusy = errors.New("wasm: too many concurrent calls")
	// ErrProjectBusy: the call's project ran its share of the host's
	// calls (Config.MaxConcurrentPerProject, or less while other projects
	// call) for as long as the call waited.
	ErrProjectBusy = errors.New("wasm: too many concurrent calls of the project")
	// ErrClosed: the host is closed.
	ErrClosed = errors.New("wasm: host closed")
)
