package wasm

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseResponse(t *testing.T) {
	big := "Content-Type: text/plain\r\n\r\n" + strings.Repeat("x", 10000)
	tests := []struct {
		name       string
		out        string
		wantErr    bool
		wantStatus int
		wantBody   string
		wantHeader map[string]string
	}{
		{name: "content type only", out: "Content-Type: text/html\r\n\r\n<h1>hi</h1>", wantStatus: 200, wantBody: "<h1>hi</h1>", wantHeader: map[string]string{"Content-Type": "text/html"}},
		{name: "status with reason", out: "Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnope", wantStatus: 404, wantBody: "nope"},
		{name: "bare LF lines", out: "Status: 201\nX-A: b\n\nbody\n", wantStatus: 201, wantBody: "body\n", wantHeader: map[string]string{"X-A": "b"}},
		{name: "location redirects", out: "Location: /elsewhere\r\n\r\n", wantStatus: 302, wantHeader: map[string]string{"Location": "/elsewhere"}},
		{name: "hop-by-hop and Status removed", out: "Status: 200\r\nConnection: close\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\nContent-Type: a/b\r\n\r\nx", wantStatus: 200, wantBody: "x",
			wantHeader: map[string]string{"Connection": "", "Content-Length": "", "Transfer-Encoding": "", "Status": ""}},
		{name: "body longer than the read buffer", out: big, wantStatus: 200, wantBody: strings.Repeat("x", 10000)},
		{name: "empty output", out: "", wantErr: true},
		{name: "no header block", out: "hello world", wantErr: true},
		{name: "blank line first", out: "\r\nbody", wantErr: true},
		{name: "status not a number", out: "Status: abc\r\n\r\n", wantErr: true},
		{name: "status out of range", out: "Status: 999\r\n\r\n", wantErr: true},
		{name: "status too short", out: "Status: 20\r\n\r\n", wantErr: true},
		{name: "invalid header name", out: "Bad Header: x\r\n\r\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseResponse([]byte(tc.out))
			if tc.wantErr {
				if !errors.Is(err, ErrBadResponse) {
					t.Fatalf("err = %v, want ErrBadResponse", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.wantStatus || (tc.wantBody != "" && string(r.Body) != tc.wantBody) {
				t.Fatalf("got %d %q, want %d %q", r.Status, r.Body, tc.wantStatus, tc.wantBody)
			}
			for k, v := range tc.wantHeader {
				if got := r.Header.Get(k); got != v {
					t.Fatalf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestCGIEnv(t *testing.T) {
	r := &Request{
		Method: "POST", Host: "my-app.localhost:8443", Path: "/a%2Fb", RawQuery: "x=1",
		Header:     http.Header{"Content-Type": {"text/plain"}, "X-Forwarded-For": {"1.1.1.1", "2.2.2.2"}, "Proxy": {"http://evil"}, "Authorization": {"Bearer t"}},
		Body:       []byte("abc"),
		RemoteAddr: "203.0.113.9:5555",
		HTTPS:      true,
	}
	env := cgiEnv(map[string]string{"API": "k", "REQUEST_METHOD": "FORGED", "SERVICE_PROJECT_ID": "forged", "BAD=NAME": "x"}, "prj_1", r)
	want := []string{
		"API=k", "CONTENT_LENGTH=3", "CONTENT_TYPE=text/plain", "HTTPS=on", "HTTP_AUTHORIZATION=Bearer t",
		"HTTP_HOST=my-app.localhost:8443", "HTTP_X_FORWARDED_FOR=1.1.1.1, 2.2.2.2", "PATH_INFO=/a%2Fb", "QUERY_STRING=x=1",
		"REMOTE_ADDR=203.0.113.9", "REMOTE_PORT=5555", "REQUEST_METHOD=POST", "REQUEST_URI=/a%2Fb?x=1",
		"SERVER_NAME=my-app.localhost", "SERVER_PORT=8443", "SERVICE_PROJECT_ID=prj_1",
	}
	for _, w := range want {
		t.Run(w, func(t *testing.T) {
			if !slices.Contains(env, w) {
				t.Fatalf("env lacks %q: %q", w, env)
			}
		})
	}
	for _, bad := range []string{"HTTP_PROXY", "BAD=NAME", "HTTP_CONTENT_TYPE"} {
		t.Run("no "+bad, func(t *testing.T) {
			for _, kv := range env {
				if strings.HasPrefix(kv, bad+"=") {
					t.Fatalf("env holds %q", kv)
				}
			}
		})
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{"Content-Type: a\r\n\r\nb", "Status: 404\n\n", "Location: /x\r\n\r\n", "", "x", "Status: 2000\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := ParseResponse(out)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			return
		}
		if r.Status < 100 || r.Status > 599 {
			t.Fatalf("status %d", r.Status)
		}
		if len(r.Body) > len(out) {
			t.Fatal("body longer than the output")
		}
		for _, k := range hopHeaders {
			if r.Header.Get(k) != "" {
				t.Fatalf("hop header %s kept", k)
			}
		}
	})
}
