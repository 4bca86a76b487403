package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

type settings struct {
	Name    string     `json:"name"`
	Enabled *bool      `json:"enabled,omitempty"`
	Count   int        `json:"count"`
	Tags    []string   `json:"tags"`
	Size    uint8      `json:"size"`
	Limit   *int64     `json:"limit"`
	Ratio   float32    `json:"ratio"`
	Addr    netip.Addr `json:"addr"`
	Inner   struct {
		N int `json:"n"`
	} `json:"inner"`
	IDs []int `json:"ids"`
}

func TestDecodeBytes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		allowEmpty bool
		code       string // "" for success
		msg        string // substring of the message
	}{
		{"ok", `{"name":"a","count":2}`, false, "", ""},
		{"empty refused", ``, false, "invalid_request", "empty"},
		{"empty allowed", `  `, true, "", ""},
		{"unknown field", `{"name":"a","bogus":1}`, false, "unknown_field", `"bogus"`},
		{"syntax error says where", "{\n  \"name\": \"a\",\n  oops\n}", false, "invalid_request", "line 3"},
		{"truncated", `{"name":"a"`, false, "invalid_request", "ends early"},
		{"wrong type names field", `{"count":"two"}`, false, "invalid_request", `field "count" must be a whole number, not a string`},
		{"fraction for an integer", `{"count":50.5}`, false, "invalid_request", `field "count" must be a whole number, not 50.5`},
		{"fraction for an integer pointer", `{"limit":0.25}`, false, "invalid_request", `field "limit" must be a whole number, not 0.25`},
		{"fraction in a nested object", `{"inner":{"n":1.5}}`, false, "invalid_request", `field "inner.n" must be a whole number, not 1.5`},
		{"fraction in an array", `{"ids":[1,2.5]}`, false, "invalid_request", `field "ids" must be a whole number, not 2.5`},
		{"exponent for an integer", `{"count":1e3}`, false, "invalid_request", `field "count" must be a whole number written with digits only (no fraction or exponent), not 1e3`},
		{"integer too large", `{"count":99999999999999999999}`, false, "invalid_request", `field "count" must be a whole number from -9223372036854775808 to 9223372036854775807, not 99999999999999999999`},
		{"negative for unsigned", `{"size":-1}`, false, "invalid_request", `field "size" must be a whole number from 0 to 255, not -1`},
		{"over a small unsigned", `{"size":300}`, false, "invalid_request", `field "size" must be a whole number from 0 to 255, not 300`},
		{"boolean for an integer", `{"count":true}`, false, "invalid_request", `field "count" must be a whole number, not a boolean`},
		{"object for an integer", `{"count":{}}`, false, "invalid_request", `field "count" must be a whole number, not an object`},
		{"float out of range", `{"ratio":1e39}`, false, "invalid_request", `field "ratio" must be a number in range, not 1e39`},
		{"string for a float", `{"ratio":"half"}`, false, "invalid_request", `field "ratio" must be a number, not a string`},
		{"number for a string", `{"name":5}`, false, "invalid_request", `field "name" must be a string, not a number`},
		{"number for a boolean", `{"enabled":1}`, false, "invalid_request", `field "enabled" must be true or false, not a number`},
		{"string for an array", `{"tags":"a"}`, false, "invalid_request", `field "tags" must be an array, not a string`},
		{"number for a text value", `{"addr":5}`, false, "invalid_request", `field "addr" must be a string, not a number`},
		{"number body", `5`, false, "invalid_request", "request body must be a JSON object, not a number"},
		{"array body", `[1,2]`, false, "invalid_request", "JSON object"},
		{"trailing data", `{"name":"a"} {"name":"b"}`, false, "invalid_request", "after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s settings
			err := DecodeBytes([]byte(tc.body), &s, tc.allowEmpty)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) || e.Kind.Status() != 400 {
				t.Fatalf("err = %#v, want code %s containing %q", err, tc.code, tc.msg)
			}
			// encoding/json's own wording ("number 50.5") never shows.
			if strings.Contains(e.Message, "not number") || strings.Contains(e.Message, "of another type") {
				t.Fatalf("message %q", e.Message)
			}
		})
	}
}

func TestDecodeBodyLimit(t *testing.T) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"name":"`+strings.Repeat("a", 100)+`"}`))
	r.Body = http.MaxBytesReader(rec, r.Body, 50)
	var s settings
	err := Decode(r, &s, false)
	var e *Error
	if !errors.As(err, &e) || e.Kind.Status() != 413 || e.Code != "body_too_large" {
		t.Fatalf("err = %v, want 413 body_too_large", err)
	}
}

func TestWriteErrorShape(t *testing.T) {
	rec := httptest.NewRecorder()
	e := Conflict("deletion_blocked", "cannot").With("blockers", []string{"x"})
	e.RetryAfter = 7
	WriteError(rec, httptest.NewRequest("GET", "/", nil), nil, e)
	if rec.Code != 409 || rec.Header().Get("Retry-After") != "7" {
		t.Fatalf("status %d retry %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	want := `{"error":{"blockers":["x"],"code":"deletion_blocked","message":"cannot"}}`
	if strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("body %s, want %s", rec.Body, want)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, httptest.NewRequest("GET", "/", nil), nil, AsError(errors.New("db password is hunter2")))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "hunter2") {
		t.Fatalf("internal error leaked: %d %s", rec.Code, rec.Body)
	}
}

func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{`{"name":"a","count":1,"tags":["x"]}`, `{`, `[]`, `{"enabled":null}`, "{\"name\":\"\\u0000\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s settings
		err := DecodeBytes(data, &s, false)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind.Status() != 400 || e.Message == "" {
			t.Fatalf("DecodeBytes(%q) = %v: every failure must be a 400 with a message", data, err)
		}
	})
}
