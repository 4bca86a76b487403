package h2

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawConn is a client that writes frames as a test wants them.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	blk bytes.Buffer
}

func dialRaw(t *testing.T, addr string, settings ...http2.Setting) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{t: t, c: c, fr: http2.NewFramer(c, c)}
	r.enc = hpack.NewEncoder(&r.blk)
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	if _, err := r.next(func(f http2.Frame) bool { _, ok := f.(*http2.SettingsFrame); return ok }); err != nil {
		t.Fatalf("no SETTINGS from the server: %v", err)
	}
	r.fr.WriteSettingsAck()
	return r
}

// block encodes a request's header block: GET /path plus fields.
func (r *rawConn) block(path string, fields ...string) []byte {
	r.blk.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "t.test"}, {":path", path}} {
		r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for i := 0; i+1 < len(fields); i += 2 {
		r.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(r.blk.Bytes())
}

func (r *rawConn) headers(id uint32, endStream bool, blk []byte) {
	r.t.Helper()
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk, EndStream: endStream, EndHeaders: true}); err != nil {
		r.t.Fatal(err)
	}
}

// next reads frames until match says yes (within 10 s); the error is the
// read's (io.EOF: the server closed the connection).
func (r *rawConn) next(match func(http2.Frame) bool) (http2.Frame, error) {
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		if match(f) {
			return f, nil
		}
	}
}

// wantGoAway reads until GOAWAY with code, then the connection's end.
func (r *rawConn) wantGoAway(code http2.ErrCode) {
	r.t.Helper()
	f, err := r.next(func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok })
	if err != nil {
		r.t.Fatalf("want GOAWAY %v: %v", code, err)
	}
	if got := f.(*http2.GoAwayFrame).ErrCode; got != code {
		r.t.Fatalf("GOAWAY %v, want %v", got, code)
	}
	if _, err := r.next(func(http2.Frame) bool { return false }); !errors.Is(err, io.EOF) && !isReset(err) {
		r.t.Fatalf("after GOAWAY: %v, want the connection closed", err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// wantRST reads until RST_STREAM on id, and checks its code.
func (r *rawConn) wantRST(id uint32, code http2.ErrCode) {
	r.t.Helper()
	f, err := r.next(func(f http2.Frame) bool { rst, ok := f.(*http2.RSTStreamFrame); return ok && rst.StreamID == id })
	if err != nil {
		r.t.Fatalf("want RST_STREAM %v on %d: %v", code, id, err)
	}
	if got := f.(*http2.RSTStreamFrame).ErrCode; got != code {
		r.t.Fatalf("RST_STREAM %v, want %v", got, code)
	}
}

// wantStatus reads until the response header of id, and checks :status.
func (r *rawConn) wantStatus(id uint32, status string) {
	r.t.Helper()
	f, err := r.next(func(f http2.Frame) bool { h, ok := f.(*http2.MetaHeadersFrame); return ok && h.StreamID == id })
	if err != nil {
		r.t.Fatalf("want the response of stream %d: %v", id, err)
	}
	if got := f.(*http2.MetaHeadersFrame).PseudoValue("status"); got != status {
		r.t.Fatalf(":status %s, want %s", got, status)
	}
}

// TestLimits: the bounds a client cannot get past, each met by a client
// written frame by frame.
func TestLimits(t *testing.T) {
	var running, peak atomic.Int32
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	handler := func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/slow":
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			select {
			case <-slow:
			case <-time.After(100 * time.Millisecond):
			}
			running.Add(-1)
		case "/echo":
			ctx.SetBody(ctx.Request.Body())
		case "/big":
			ctx.SetBodyString(strings.Repeat("x", 100))
		}
	}
	newServer := func() *Server {
		return &Server{Handler: handler, MaxConcurrentStreams: 8, MaxResetStreams: 20, MaxHeaderListSize: 4 << 10,
			ReadTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, BodyTimeout: 200 * time.Millisecond,
			WriteTimeout: 200 * time.Millisecond}
	}
	pingFlood := func(t *testing.T, r *rawConn) {
		var err error
		data := [8]byte{1}
		for i := 0; i < 4000000 && err == nil; i++ {
			r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			err = r.fr.WritePing(false, data)
		}
		if err == nil {
			t.Fatal("four million unread PINGs and the connection is still open")
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the server stopped reading without closing the connection: %v", err)
		}
	}
	for _, tc := range []struct {
		name     string
		settings []http2.Setting
		run      func(t *testing.T, r *rawConn)
		opt      func(*Server)
	}{
		{name: "rapid reset", run: func(t *testing.T, r *rawConn) {
			blk := r.block("/slow")
			var err error
			for id := uint32(1); id < 20000 && err == nil; id += 2 {
				r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk, EndStream: true, EndHeaders: true})
				err = r.fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
			r.wantGoAway(http2.ErrCodeEnhanceYourCalm)
			if p := peak.Load(); p > 8 {
				t.Errorf("%d handlers ran at once, want at most MaxConcurrentStreams (8)", p)
			}
		}},
		{name: "CONTINUATION flood", run: func(t *testing.T, r *rawConn) {
			r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: r.block("/")[:3]})
			var err error
			for i := 0; i < 100000 && err == nil; i++ {
				err = r.fr.WriteContinuation(1, false, nil)
			}
			r.wantGoAway(http2.ErrCodeEnhanceYourCalm)
		}},
		{name: "header block cut short", run: func(t *testing.T, r *rawConn) {
			r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: r.block("/")[:3]})
			start := time.Now()
			r.wantGoAway(http2.ErrCodeNo)
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("closed after %v, before ReadTimeout", d)
			}
		}},
		{name: "header list too large", run: func(t *testing.T, r *rawConn) {
			r.headers(1, true, r.block("/", "x-big", strings.Repeat("b", 5000)))
			r.wantStatus(1, "431")
			r.headers(3, true, r.block("/"))
			r.wantStatus(3, "200") // the connection serves on
		}},
		{name: "concurrent streams", run: func(t *testing.T, r *rawConn) {
			blk := r.block("/echo")
			for id := uint32(1); id <= 17; id += 2 {
				r.headers(id, false, blk) // bodies never sent: 8 streams stay open
			}
			r.wantRST(17, http2.ErrCodeRefusedStream)
		}},
		{name: "idle timeout", run: func(t *testing.T, r *rawConn) {
			r.headers(1, true, r.block("/"))
			r.wantStatus(1, "200")
			r.wantGoAway(http2.ErrCodeNo)
		}},
		{name: "body timeout", run: func(t *testing.T, r *rawConn) {
			r.headers(1, false, r.block("/echo", "content-length", "10"))
			r.fr.WriteData(1, false, []byte("12345"))
			r.wantRST(1, http2.ErrCodeCancel)
		}},
		{name: "no window for the response", settings: []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 0}}, run: func(t *testing.T, r *rawConn) {
			r.headers(1, true, r.block("/big"))
			r.wantStatus(1, "200")
			r.wantRST(1, http2.ErrCodeCancel)
		}},
		{name: "body past its content-length", run: func(t *testing.T, r *rawConn) {
			r.headers(1, false, r.block("/echo", "content-length", "3"))
			r.fr.WriteData(1, true, []byte("12345"))
			r.wantRST(1, http2.ErrCodeProtocol)
		}},
		{name: "PING flood left unread", run: pingFlood},
		{name: "PING flood left unread, no write timeout", run: pingFlood, opt: func(s *Server) { s.WriteTimeout = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer()
			if tc.opt != nil {
				tc.opt(srv)
			}
			r := dialRaw(t, startServer(t, srv), tc.settings...)
			tc.run(t, r)
		})
	}
}

// TestInlineTakeOverFrames: after reading moved on from a slow inline
// handler, the next frame, whatever its kind, is processed once: one PING,
// one acknowledgement.
func TestInlineTakeOverFrames(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := &Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/block" {
			started <- struct{}{}
			<-release
		}
		ctx.SetBodyString("ok")
	}, Inline: func(*fasthttp.RequestCtx) bool { return true }, InlineLimit: time.Millisecond}
	r := dialRaw(t, startServer(t, srv))
	defer close(release)
	r.headers(1, true, r.block("/block"))
	<-started
	// The PING is answered only once another goroutine reads: the first
	// one is in the handler.
	r.fr.WritePing(false, [8]byte{7})
	acks := 0
	if _, err := r.next(func(f http2.Frame) bool {
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck()
	}); err != nil {
		t.Fatalf("no PING acknowledgement while a slow handler runs inline: %v", err)
	}
	acks++
	r.headers(3, true, r.block("/after"))
	if _, err := r.next(func(f http2.Frame) bool {
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			acks++
		}
		h, ok := f.(*http2.MetaHeadersFrame)
		return ok && h.StreamID == 3
	}); err != nil {
		t.Fatalf("no answer to the request after the slow one: %v", err)
	}
	if acks != 1 {
		t.Fatalf("%d PING acknowledgements, want 1", acks)
	}
}
