package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"reflect"
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
		if typ.Field == "" {
			return Invalid("request body must be a JSON object, not %s", valueOf(typ.Value))
		}
		return Invalid("field %q %s", typ.Field, wrongType(typ.Type, typ.Value))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("malformed JSON: the body ends early at %s", position(data, int64(len(data))))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return E(KindInvalid, "unknown_field", "unknown field %s", name).With("field", strings.Trim(name, `"`))
	}
	return Invalid("invalid JSON: %v", err)
}

// wrongType says what a field of type t must be, given the JSON value
// encoding/json could not store in it: value is "string", "bool",
// "array", "object", "number", or "number <literal>".
func wrongType(t reflect.Type, value string) string {
	lit, isNumber := strings.CutPrefix(value, "number ")
	isNumber = isNumber && lit != ""
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !isNumber {
			return "must be a whole number, not " + valueOf(value)
		}
		lo, hi := intRange(t)
		if _, ok := new(big.Int).SetString(lit, 10); ok {
			return fmt.Sprintf("must be a whole number from %s to %s, not %s", lo, hi, lit)
		}
		if f, ok := new(big.Float).SetString(lit); ok && f.IsInt() {
			return fmt.Sprintf("must be a whole number written with digits only (no fraction or exponent), not %s", lit)
		}
		return "must be a whole number, not " + lit
	case reflect.Float32, reflect.Float64:
		if isNumber {
			return "must be a number in range, not " + lit
		}
		return "must be a number, not " + valueOf(value)
	}
	return "must be " + jsonType(t) + ", not " + valueOf(value)
}

// intRange is the smallest and largest value of integer type t.
func intRange(t reflect.Type) (lo, hi string) {
	bits := uint(t.Bits())
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits), big.NewInt(1))
		return "0", max.String()
	}
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits-1), big.NewInt(1))
	min := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), bits-1))
	return min.String(), max.String()
}

// valueOf names the JSON value encoding/json reports: its literal for a
// number, else its kind with an article.
func valueOf(value string) string {
	if lit, ok := strings.CutPrefix(value, "number "); ok && lit != "" {
		return lit
	}
	switch value {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "number":
		return "a number"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return value
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonType names the JSON value a Go type takes.
func jsonType(t reflect.Type) string {
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
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
