package edge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestErrorReachesWritingClient: when the edge refuses a request it has
// not read to the end (a header past the limit, one it cannot parse, a
// body past the limit) and closes the connection, a client still writing
// gets the refusal, not a reset: the close lingers (linger.go).
func TestErrorReachesWritingClient(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxHeaderBytes, c.MaxBodyBytes = 8<<10, 1<<20 })
	o := newAppOrigin(t)
	app := h.newSite("lingerapp")
	app.deployOrigin("app", o.srv.URL)
	big := strings.Repeat("b", 256<<10)
	body := bytes.Repeat([]byte("0123456789"), 400_000) // 4 MB, past the 1 MiB limit
	for _, tc := range []struct {
		name   string
		status int
		raw    string // sent whole before reading; empty: Go's client
		req    func() *http.Request
	}{
		{name: "huge header, Go client", status: 431, req: func() *http.Request {
			r, _ := http.NewRequest("GET", "https://"+app.host+"/", nil)
			r.Header.Set("X-Big", big[:64<<10])
			return r
		}},
		{name: "huge header, raw", status: 431,
			raw: "GET / HTTP/1.1\r\nHost: " + app.host + "\r\nX-Big: " + big + "\r\n\r\n"},
		{name: "unparsable request, more behind it", status: 400,
			raw: "GET / HTTP/1.1\r\nHost: " + app.host + "\r\nNo colon here\r\n\r\n" + big},
		{name: "body past the limit by Content-Length, sent anyway", status: 413,
			raw: fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", app.host, len(body), body)},
		{name: "chunked body past the limit, Go client", status: 413, req: func() *http.Request {
			r, _ := http.NewRequest("POST", "https://"+app.host+"/upload", io.MultiReader(bytes.NewReader(body)))
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 10 {
				var resp *http.Response
				var err error
				if tc.raw == "" {
					resp, err = h.client.Do(tc.req())
				} else {
					c := h.dialTLS(app.host)
					go c.Write([]byte(tc.raw))
					resp, err = http.ReadResponse(bufio.NewReader(c), nil)
					defer c.Close()
				}
				if err != nil {
					t.Fatalf("#%d: %v", i, err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("#%d: %d, want %d", i, resp.StatusCode, tc.status)
				}
			}
		})
	}
	if r := h.get(app.host, "/echo"); r.status != 200 {
		t.Errorf("afterwards: %d", r.status)
	}
}
