package buckets

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"
)

// TestRequestOrigin: absolute links in S3 answers start with the public
// base URL for requests to its host (a proxy in front terminating TLS),
// else with the request's host.
func TestRequestOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, public, host string
		tls                bool
		want               string
	}{
		{"the public host behind a TLS proxy", "https://cp.example.com", "cp.example.com", false, "https://cp.example.com"},
		{"the public URL with a path", "https://example.com/platform", "example.com", false, "https://example.com/platform"},
		{"the S3 host, public URL https", "https://cp.example.com", "s3.example.com", false, "https://s3.example.com"},
		{"the S3 host over TLS", "http://127.0.0.1:17070", "s3.example.com", true, "https://s3.example.com"},
		{"the API address", "http://127.0.0.1:17070", "127.0.0.1:17070", false, "http://127.0.0.1:17070"},
		{"another host over plain HTTP", "http://127.0.0.1:17070", "10.0.0.2:17070", false, "http://10.0.0.2:17070"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{cfg: Config{PublicBaseURL: tc.public}}
			r := httptest.NewRequest("GET", "/s3/b/k", nil)
			r.Host = tc.host
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if got := s.requestOrigin(r); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}
