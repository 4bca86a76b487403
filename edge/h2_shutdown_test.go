package edge

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTP2GracefulShutdown: HTTP/2 connections are served by the edge's
// HTTP/2 server (edge/internal/h2) on the mux's TLS connections; on stop,
// a request in flight on one finishes (the connection gets GOAWAY, then
// ends), and one past ShutdownTimeout is cut when its connection is
// closed, so Run returns in bounded time.
func TestHTTP2GracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		finishes bool // the origin answers before ShutdownTimeout
	}{
		{"in flight finishes", true},
		{"past the shutdown timeout is cut", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				fmt.Fprint(w, "finished")
			}))
			t.Cleanup(origin.Close)
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			le := newMixedEdge(t, origin.URL, func(c *Config) { c.ShutdownTimeout = time.Second })
			c := le.h2Client()
			type result struct {
				status int
				proto  string
				body   string
				err    error
			}
			res := make(chan result, 1)
			go func() {
				resp, err := c.Get("https://app.apps.test/slow")
				if err != nil {
					res <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				res <- result{resp.StatusCode, resp.Proto, string(b), err}
			}()
			<-started
			stopped := make(chan struct{})
			go func() { le.stop(); close(stopped) }()
			if tc.finishes {
				// The listener closes first: wait for it, then let the
				// origin answer.
				for range 1000 {
					if _, err := c.Get("https://www.apps.test/"); err != nil {
						break
					}
				}
				close(release)
				r := <-res
				if r.err != nil || r.status != 200 || r.body != "finished" || r.proto != "HTTP/2.0" {
					t.Fatalf("in-flight request: %s %d %q %v", r.proto, r.status, r.body, r.err)
				}
			} else {
				r := <-res
				if r.err == nil && r.body == "finished" {
					t.Fatalf("request past the shutdown timeout finished: %d %q", r.status, r.body)
				}
			}
			select {
			case <-stopped:
			case <-time.After(15 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}
