// Package api holds what every control-plane handler shares: the one JSON
// error model and the adapter from error kinds to statuses, strict request
// decoding, JSON responses, pagination and the authentication middleware.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
)

// Kind classifies an error; one table maps kinds to HTTP statuses.
type Kind int

// The kinds of error a handler can return.
const (
	KindInternal Kind = iota
	KindInvalid
	KindUnauthenticated
	KindForbidden
	KindNotFound
	KindConflict
	KindGone
	KindTooLarge
	KindPaymentRequired
	KindRateLimited
	KindNotImplemented
	KindBadGateway
	KindUnavailable
	KindUnprocessable
	KindMethodNotAllowed
)

var statusOf = map[Kind]int{
	KindInternal:         http.StatusInternalServerError,
	KindInvalid:          http.StatusBadRequest,
	KindUnauthenticated:  http.StatusUnauthorized,
	KindForbidden:        http.StatusForbidden,
	KindNotFound:         http.StatusNotFound,
	KindConflict:         http.StatusConflict,
	KindGone:             http.StatusGone,
	KindTooLarge:         http.StatusRequestEntityTooLarge,
	KindPaymentRequired:  http.StatusPaymentRequired,
	KindRateLimited:      http.StatusTooManyRequests,
	KindNotImplemented:   http.StatusNotImplemented,
	KindBadGateway:       http.StatusBadGateway,
	KindUnavailable:      http.StatusServiceUnavailable,
	KindUnprocessable:    http.StatusUnprocessableEntity,
	KindMethodNotAllowed: http.StatusMethodNotAllowed,
}

// defaultCode is the code an error of a kind carries when none is given.
var defaultCode = map[Kind]string{
	KindInternal:         "internal",
	KindInvalid:          "invalid_request",
	KindUnauthenticated:  "unauthenticated",
	KindForbidden:        "forbidden",
	KindNotFound:         "not_found",
	KindConflict:         "conflict",
	KindGone:             "gone",
	KindTooLarge:         "too_large",
	KindPaymentRequired:  "payment_required",
	KindRateLimited:      "rate_limited",
	KindNotImplemented:   "not_implemented",
	KindBadGateway:       "bad_gateway",
	KindUnavailable:      "unavailable",
	KindUnprocessable:    "unprocessable",
	KindMethodNotAllowed: "method_not_allowed",
}

// Status returns the HTTP status of kind k.
func (k Kind) Status() int { return statusOf[k] }

// Error is an error a client may see. Fields is extra members of the error
// object (for example blockers, limit, current); RetryAfter sets the
// Retry-After header in seconds.
type Error struct {
	Kind       Kind
	Code       string
	Message    string
	Fields     map[string]any
	RetryAfter int
	Err        error // cause, logged for 5xx, never sent
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// With returns a copy of e with an extra field in the error object.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		c.Fields[k] = v
	}
	c.Fields[key] = value
	return &c
}

// Wrap returns a copy of e whose cause is err, so callers match a sentinel
// with errors.Is while the client sees e's code and message.
func (e *Error) Wrap(err error) *Error {
	c := *e
	c.Err = err
	return &c
}

// E builds an *Error of kind k with a code (empty for the kind's default)
// and a formatted message.
func E(k Kind, code, format string, args ...any) *Error {
	if code == "" {
		code = defaultCode[k]
	}
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 with code invalid_request.
func Invalid(format string, args ...any) *Error { return E(KindInvalid, "", format, args...) }

// NotFound is a 404 naming what was not found.
func NotFound(what string) *Error { return E(KindNotFound, "", "%s not found", what) }

// Forbidden is a 403 with the given code (empty for "forbidden").
func Forbidden(code, format string, args ...any) *Error {
	return E(KindForbidden, code, format, args...)
}

// Conflict is a 409 with the given code.
func Conflict(code, format string, args ...any) *Error { return E(KindConflict, code, format, args...) }

// Internal wraps an unexpected error as a 500; the cause is logged, not sent.
func Internal(err error) *Error {
	return &Error{Kind: KindInternal, Code: "internal", Message: "internal error", Err: err}
}

type errorBody struct {
	Error map[string]any `json:"error"`
}

// WriteError writes err as the one JSON error shape
// {"error": {"code", "message", ...fields}}. Errors that are not *Error are
// internal: logged with the request, answered with a bare 500.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = Internal(err)
	}
	status := e.Kind.Status()
	if status >= 500 && log != nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	obj := make(map[string]any, 2+len(e.Fields))
	for k, v := range e.Fields {
		obj[k] = v
	}
	obj["code"] = e.Code
	obj["message"] = e.Message
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	WriteJSON(w, status, errorBody{Error: obj})
}
