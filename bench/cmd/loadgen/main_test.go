package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"
)

// servers starts an HTTPS server speaking HTTP/2 and an HTTP/3 server on
// the same certificate; both answer /ok with 256 bytes and /no with 403.
// It returns the two base URLs.
func servers(t *testing.T) (h2URL, h3URL string) {
	t.Helper()
	body := bytes.Repeat([]byte("x"), 256)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "bench.localhost" || r.Header.Get("X-Forwarded-For") != "203.0.113.9" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/no" {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		w.Write(body)
	})
	s2 := httptest.NewUnstartedServer(h)
	s2.EnableHTTP2 = true
	s2.StartTLS()
	t.Cleanup(s2.Close)

	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s3 := &http3.Server{Handler: h, TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: s2.TLS.Certificates})}
	go s3.Serve(udp)
	t.Cleanup(func() { s3.Close(); udp.Close() })
	return s2.URL, "https://" + udp.LocalAddr().String()
}

func TestLoad(t *testing.T) {
	h2, h3 := servers(t)
	for _, tc := range []struct {
		name, proto, url string
		refused          bool
	}{
		{"h2", "h2", h2 + "/ok", false},
		{"h3", "h3", h3 + "/ok", false},
		{"h2 refused", "h2", h2 + "/no", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run([]string{"-proto", tc.proto, "-c", "4", "-conns", "2", "-d", "300ms",
				"-H", "Host: bench.localhost", "-H", "X-Forwarded-For: 203.0.113.9", tc.url}, &out)
			if err != nil {
				t.Fatal(err)
			}
			line, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "BENCHJSON ")
			if !ok {
				t.Fatalf("output %q", out.String())
			}
			var s stats
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			if s.Requests < 10 || s.DurationUS < 250_000 || s.P50 <= 0 || s.P99 < s.P50 || s.Max < s.P99 {
				t.Fatalf("stats %+v", s)
			}
			if s.Read+s.Connect+s.Timeout != 0 {
				t.Fatalf("errors: %+v", s)
			}
			if tc.refused && s.Status != s.Requests || !tc.refused && (s.Status != 0 || s.Bytes != 256*s.Requests) {
				t.Fatalf("statuses: %+v", s)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	h2, h3 := servers(t)
	for _, tc := range []struct{ proto, url, want string }{
		{"h2", h2 + "/ok", "200 256\n"},
		{"h3", h3 + "/ok", "200 256\n"},
		{"h3", h3 + "/no", "403 8\n"},
	} {
		var out bytes.Buffer
		if err := run([]string{"-proto", tc.proto, "-check", "-H", "Host: bench.localhost", "-H", "X-Forwarded-For: 203.0.113.9", tc.url}, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.proto, tc.url, out.String(), tc.want)
		}
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"http://127.0.0.1/"},
		{"-proto", "h1", "https://127.0.0.1/"},
		{"-c", "2", "-conns", "4", "https://127.0.0.1/"},
		{"-H", "no colon", "https://127.0.0.1/"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
