package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultMaxBody is the request body limit of routes that set none.
const DefaultMaxBody = 1 << 20

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Reply ends a handler that called its service: it writes v with status
// when err is nil and returns err otherwise, for the error adapter. v must be
// safe to build from a failed call's zero results.
func Reply(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	WriteJSON(w, status, v)
	return nil
}

// Deleted is the answer of a DELETE that removed something.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// Decode reads one JSON object from the request body into dst, strictly:
// unknown fields, trailing data, a body over the route's limit and malformed
// JSON are 400 or 413 errors whose message says where. An empty body decodes
// as {} when allowEmpty, else it is refused.
func Decode(r *http.Request, dst any, allowEmpty bool) error {
	return DecodeReader(r.Body, dst, allowEmpty)
}

// DecodeReader is Decode over any reader (already size-limited by the caller
// or by the server's MaxBytesReader).
func DecodeReader(body io.Reader, dst any, allowEmpty bool) error {
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return E(KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return Invalid("reading request body: %v", err)
	}
	return DecodeBytes(data, dst, allowEmpty)
}

// DecodeBytes decodes data as Decode does.
func DecodeBytes(data []byte, dst any, allowEmpty bool) error {
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return nil
		}
		return Invalid("request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(data, err)
	}
	if dec.More() {
		return Invalid("request body has data after the JSON object at %s", position(data, dec.InputOffset()))
	}
	return nil
}

func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return Invalid("malformed JSON at %s: %v", position(data, syn.Offset), syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return Invalid("request body must be a JSON object, not %s", typ.Value)
		}
		return Invalid("field %q must be %s, not %s", field, jsonType(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("malformed JSON: the body ends early at %s", position(data, int64(len(data))))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return E(KindInvalid, "unknown_field", "unknown field %s", name).With("field", strings.Trim(name, `"`))
	}
	return Invalid("invalid JSON: %v", err)
}

func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int64", "int32", "uint", "uint64", "uint32", "float64", "float32":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}

// position renders a byte offset as "line L, column C".
func position(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}
