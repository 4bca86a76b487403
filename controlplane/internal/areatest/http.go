package areatest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Response is an answer of a test server, read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Code is the error code of an error answer ({"error": {"code": ...}}),
// empty for any other body.
func (r Response) Code() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.Body, &b)
	return b.Error.Code
}

// Field is a member of the error object of an error answer, nil when
// there is none.
func (r Response) Field(name string) any {
	var b struct {
		Error map[string]any `json:"error"`
	}
	json.Unmarshal(r.Body, &b)
	return b.Error[name]
}

// Decode unmarshals the body into v and fails the test when it is not
// that JSON.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %.2000s: %v", r.Body, err)
	}
}

// OK fails the test unless the status is below 300, then decodes the body
// into v when v is not nil.
func (r Response) OK(t testing.TB, v any) {
	t.Helper()
	if r.Status >= 300 {
		t.Fatalf("status %d: %.2000s", r.Status, r.Body)
	}
	if v != nil {
		r.Decode(t, v)
	}
}

// Want fails the test unless the answer has status and, when code is not
// empty, that error code.
func (r Response) Want(t testing.TB, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.Code() != code) {
		t.Fatalf("got %d %s, want %d %s: %.2000s", r.Status, r.Code(), status, code, r.Body)
	}
}

// Call sends a request to srv as key ("Bearer key"; no Authorization
// header when key is empty) and reads the answer. A path starting with "/"
// is on srv, any other is a whole URL used as it is. body is sent as it is
// when it is a string, []byte or io.Reader, as JSON otherwise, and nothing
// when nil; no Content-Type is set unless header names one. header holds
// name, value pairs set on the request after the key.
func Call(t testing.TB, srv *httptest.Server, key, method, path string, body any, header ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	url := path
	if strings.HasPrefix(path, "/") {
		url = srv.URL + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return Send(t, srv.Client(), req)
}

// Must is Call failing the test unless the answer has status want.
func Must(t testing.TB, want int, srv *httptest.Server, key, method, path string, body any, header ...string) Response {
	t.Helper()
	r := Call(t, srv, key, method, path, body, header...)
	if r.Status != want {
		t.Fatalf("%s %s as %q: status %d, want %d: %.2000s", method, path, key, r.Status, want, r.Body)
	}
	return r
}

// Send sends req with c and reads the answer; a request that gets no
// answer fails the test, a body cut short is returned as far as it came.
func Send(t testing.TB, c *http.Client, req *http.Request) Response {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: data}
}
