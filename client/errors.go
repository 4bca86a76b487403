package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is the API's refusal: {"error": {"code", "message", ...fields}}.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the stable machine-readable code (not_found,
	// push_too_large, ...).
	Code string
	// Message says what went wrong, for a person.
	Message string
	// Fields are the error object's other members (limit, missing, ...).
	Fields map[string]json.RawMessage
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// Field decodes the error object's member name into v and reports whether
// it was there.
func (e *Error) Field(name string, v any) bool {
	raw, ok := e.Fields[name]
	return ok && json.Unmarshal(raw, v) == nil
}

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// StatusOf returns the HTTP status of an *Error in err, 0 when none.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// TransportError is a call that got no answer: the API was not reached or
// the connection broke.
type TransportError struct {
	Method, URL string
	Err         error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Method, e.URL, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// decodeError turns a non-2xx answer into an *Error; an answer that is
// not the API's error shape (a proxy's page) keeps its first bytes as the
// message and code http_<status>.
func decodeError(status int, body []byte) error {
	var shape struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(body, &shape) == nil && shape.Error != nil {
		json.Unmarshal(shape.Error["code"], &e.Code)
		json.Unmarshal(shape.Error["message"], &e.Message)
		delete(shape.Error, "code")
		delete(shape.Error, "message")
		e.Fields = shape.Error
	}
	if e.Code == "" {
		e.Code = fmt.Sprintf("http_%d", status)
	}
	if e.Message == "" {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		e.Message = msg
	}
	return e
}
