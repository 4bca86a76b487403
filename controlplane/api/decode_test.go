package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type settings struct {
	Name    string   `json:"name"`
	Enabled *bool    `json:"enabled,omitempty"`
	Count   int      `json:"count"`
	Tags    []string `json:"tags"`
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
		{"wrong type names field", `{"count":"two"}`, false, "invalid_request", `"count" must be a number`},
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
