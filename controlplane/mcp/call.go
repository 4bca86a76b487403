package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// HeaderVia marks a REST request made on behalf of an assistant connector
// tool call; the API records it on the audit rows the request writes.
const HeaderVia = "X-Service-Via"

// ViaConnector is the value of HeaderVia on every call the connector makes.
const ViaConnector = "connector"

// maxAnswer bounds a REST answer a tool passes back to the assistant.
const maxAnswer = 16 << 20

// Request is the REST call a tool makes: the route's method and path, the
// query and the JSON body (nil for none). A tool builds one from its
// validated arguments; the API's own handler serves it.
type Request struct {
	Method string
	// Path is escaped: ids in it go through url.PathEscape.
	Path  string
	Query url.Values
	// Body is marshalled to JSON; a json.RawMessage is sent as it is.
	Body any
	// Raw, when not nil, is sent as the body instead of Body, with
	// ContentType (an object's bytes).
	Raw         []byte
	ContentType string
}

// Answer is a REST answer: the status and the JSON body.
type Answer struct {
	Status int
	Body   json.RawMessage
}

// ErrBadAnswer is returned when the API answers something other than a JSON
// object (it never should).
var ErrBadAnswer = errors.New("mcp: the API answered something other than a JSON object")

// caller serves connector calls through the API's http.Handler.
type caller struct {
	api http.Handler
}

// do serves rq through the API as the holder of authorization (the caller's
// own "Bearer <key>") from remoteAddr, marked as made through the connector.
func (c caller) do(ctx context.Context, authorization, remoteAddr string, rq Request) (Answer, error) {
	var body []byte
	if rq.Raw != nil {
		body = rq.Raw
	} else if rq.Body != nil {
		var err error
		if raw, ok := rq.Body.(json.RawMessage); ok {
			body = raw
		} else if body, err = json.Marshal(rq.Body); err != nil {
			return Answer{}, fmt.Errorf("mcp: encode %s %s: %w", rq.Method, rq.Path, err)
		}
	}
	target := rq.Path
	if len(rq.Query) > 0 {
		target += "?" + rq.Query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, rq.Method, target, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("mcp: build %s %s: %w", rq.Method, rq.Path, err)
	}
	// Only these headers: never a cookie (a connector call is never a
	// dashboard session), never anything the assistant chose.
	req.Header.Set("Authorization", authorization)
	req.Header.Set(HeaderVia, ViaConnector)
	req.Header.Set("Accept", "application/json")
	switch {
	case rq.Raw != nil && rq.ContentType != "":
		req.Header.Set("Content-Type", rq.ContentType)
	case rq.Raw == nil && rq.Body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = remoteAddr
	status, out, err := api.ServeInProcess(c.api, req, maxAnswer)
	if err != nil {
		return Answer{}, fmt.Errorf("mcp: %s %s: answer larger than %d bytes: %w", rq.Method, rq.Path, maxAnswer, err)
	}
	if len(out) == 0 {
		out = []byte("{}")
	}
	if out[0] != '{' || !json.Valid(out) {
		return Answer{}, fmt.Errorf("%w: %s %s status %d", ErrBadAnswer, rq.Method, rq.Path, status)
	}
	return Answer{Status: status, Body: out}, nil
}

// restError is the REST error body {"error": {"code", "message", ...}}.
type restError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorText is the one line an assistant reads for a refused call.
func errorText(a Answer) string {
	var e restError
	json.Unmarshal(a.Body, &e)
	code, msg := e.Error.Code, e.Error.Message
	if code == "" {
		code = strings.ReplaceAll(strings.ToLower(http.StatusText(a.Status)), " ", "_")
	}
	if msg == "" {
		msg = http.StatusText(a.Status)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", code, a.Status, msg)
}

// Refusal is a call the connector itself refuses before calling the API
// (the connector's own limits); it is answered like a REST error.
type Refusal struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]any
}

func (e *Refusal) Error() string { return "mcp: " + e.Code + ": " + e.Message }

// answer renders the refusal as the REST error body would be.
func (e *Refusal) answer() Answer {
	obj := make(map[string]any, len(e.Fields)+2)
	for k, v := range e.Fields {
		obj[k] = v
	}
	obj["code"] = e.Code
	obj["message"] = e.Message
	b, _ := json.Marshal(map[string]any{"error": obj})
	return Answer{Status: e.Status, Body: b}
}

// refuse builds a refusal with a formatted message.
func refuse(status int, code, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}
