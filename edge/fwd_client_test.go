package edge

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/forward"
)

// rawOrigin is an origin on a loopback socket that answers each request
// with the raw bytes its path names, and counts the connections it took.
type rawOrigin struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
}

func newRawOrigin(t *testing.T, answers map[string]string) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{ln: ln}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	o.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.conns.Add(1)
			mu.Lock()
			open[c] = true
			mu.Unlock()
			o.wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					a := answers[req.URL.Path]
					if req.Method == "HEAD" {
						a = a[:strings.Index(a, "\r\n\r\n")+4] // the header alone
					}
					if _, err := io.WriteString(c, a); err != nil {
						return
					}
					if strings.Contains(a, "Connection: close") || !strings.Contains(a, "Content-Length") && !strings.Contains(a, "chunked") &&
						!strings.HasPrefix(a, "HTTP/1.1 204") && !strings.HasPrefix(a, "HTTP/1.1 304") && req.Method != "HEAD" {
						return // the body ends with the connection
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		o.wg.Wait()
	})
	return o
}

// TestFwdClient: the forwarding transport reads small bodies whole and
// streams the rest (Content-Length past forward.BufferBytes, chunked, until
// close), and gives a connection back to the pool only when its response
// was read to the end and neither side asked to close it.
func TestFwdClient(t *testing.T) {
	big := strings.Repeat("b", forward.BufferBytes+1)
	answers := map[string]string{
		"/small":   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nsmall",
		"/big":     "HTTP/1.1 200 OK\r\nContent-Length: " + itoa(len(big)) + "\r\n\r\n" + big,
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nchu\r\n4\r\nnked\r\n0\r\n\r\n",
		"/close":   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
		"/eof":     "HTTP/1.1 200 OK\r\n\r\nuntil the end",
		"/nobody":  "HTTP/1.1 204 No Content\r\n\r\n",
		"/early":   "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal",
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		stream             bool
		readPart           bool // the reader stops before the end
		reused             bool // a second request uses the same connection
	}{
		{"small body read whole", "GET", "/small", 200, "small", false, false, true},
		{"large body streamed", "GET", "/big", 200, big, true, false, true},
		{"chunked body streamed", "GET", "/chunked", 200, "chunked", true, false, true},
		{"streamed body not read to the end", "GET", "/big", 200, big[:10], true, true, false},
		{"origin asks to close", "GET", "/close", 200, "ok", false, false, false},
		{"body until the connection ends", "GET", "/eof", 200, "until the end", true, false, false},
		{"no body for 204", "GET", "/nobody", 204, "", false, false, true},
		{"HEAD reads no body", "HEAD", "/big", 200, "", false, false, true},
		{"103 skipped for the final answer", "GET", "/early", 200, "final", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := newRawOrigin(t, answers)
			cfg := Config{AllowPrivateNetworks: true}
			cfg.Provision()
			o, err := newOriginPool(&cfg).get("http://"+ro.ln.Addr().String(), false)
			if err != nil {
				t.Fatal(err)
			}
			send := func() (int, string, bool) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod(tc.method)
				req.SetRequestURI("http://" + ro.ln.Addr().String() + tc.path)
				if _, err := o.fwd.RoundTrip(req, resp, time.Now().Add(5*time.Second)); err != nil {
					t.Fatal(err)
				}
				stream := resp.IsBodyStream()
				var body []byte
				if stream {
					if tc.readPart {
						body = make([]byte, 10)
						if _, err := io.ReadFull(resp.BodyStream(), body); err != nil {
							t.Fatal(err)
						}
					} else if body, err = io.ReadAll(resp.BodyStream()); err != nil {
						t.Fatal(err)
					}
				} else {
					body = resp.Body()
				}
				return resp.StatusCode(), string(body), stream
			}
			status, body, stream := send()
			if status != tc.status || body != tc.body || stream != tc.stream {
				t.Fatalf("%d %.40q stream %v, want %d %.40q stream %v", status, body, stream, tc.status, tc.body, tc.stream)
			}
			if s, b, _ := send(); s != tc.status || b != tc.body {
				t.Fatalf("second: %d %.40q", s, b)
			}
			want := int32(2)
			if tc.reused {
				want = 1
			}
			if n := ro.conns.Load(); n != want {
				t.Fatalf("%d origin connections for two requests, want %d", n, want)
			}
		})
	}
}

// TestFwdClientCutChunkedBody: a chunked body cut by the origin closing
// the connection is reported as cut (not io.EOF: see originBody), and the
// connection is not reused.
func TestFwdClientCutChunkedBody(t *testing.T) {
	ro := newRawOrigin(t, map[string]string{
		"/cut": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n",
	})
	cfg := Config{AllowPrivateNetworks: true}
	cfg.Provision()
	o, err := newOriginPool(&cfg).get("http://"+ro.ln.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + ro.ln.Addr().String() + "/cut")
	if _, err := o.fwd.RoundTrip(req, resp, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ob := &originBody{resp: nil, r: resp.BodyStream(), chunked: forward.ResponseConn(resp)}
	b, err := io.ReadAll(ob)
	if !bytes.Equal(b, []byte("abc")) || !errors.Is(err, io.ErrUnexpectedEOF) && err == nil {
		t.Fatalf("%q %v, want \"abc\" and a cut body", b, err)
	}
}

func itoa(n int) string { return string(fasthttp.AppendUint(nil, n)) }

// slowBody gives n chunks, each after pause: a visitor's slow upload.
type slowBody struct {
	n     int
	pause time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	b.n--
	time.Sleep(b.pause) // the visitor's pace is what is tested, not a wait for another goroutine
	return copy(p, "0123456789"), nil
}

// TestFwdClientSlowUpload: a streamed upload slower in total than the
// origin timeout still arrives, since each write has the timeout of its
// own (nginx's proxy_send_timeout) and the wait for the answer starts once
// the body is sent.
func TestFwdClientSlowUpload(t *testing.T) {
	ro := newRawOrigin(t, map[string]string{"/upload": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"})
	cfg := Config{AllowPrivateNetworks: true}
	cfg.Provision()
	o, err := newOriginPool(&cfg).get("http://"+ro.ln.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + ro.ln.Addr().String() + "/upload")
	const timeout = 150 * time.Millisecond
	req.SetBodyStream(&slowBody{n: 6, pause: timeout / 2}, -1) // 3/2 of the timeout in all
	start := time.Now()
	if _, err := o.fwd.RoundTrip(req, resp, start.Add(timeout)); err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	if resp.StatusCode() != 200 || string(resp.Body()) != "ok" {
		t.Fatalf("%d %q", resp.StatusCode(), resp.Body())
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("the upload took %v, less than the timeout: the test proves nothing", d)
	}
}
