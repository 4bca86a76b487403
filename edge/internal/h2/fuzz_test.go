package h2

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzServeConn sends the client preface and SETTINGS, then whatever
// frames the input holds, to a server; it must neither panic nor hang
// (ServeConn returns once the client closes).
func FuzzServeConn(f *testing.F) {
	var seed bytes.Buffer
	fr := http2.NewFramer(&seed, nil)
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", "/"}, {"content-length", "3"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})
	fr.WriteData(1, true, []byte("abc"))
	fr.WriteWindowUpdate(0, 100)
	fr.WritePing(false, [8]byte{})
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 4, 1, 4, 0, 0, 0, 1, 0x82, 0x87, 0x84, 0x41})
	f.Fuzz(func(t *testing.T, frames []byte) {
		srv := &Server{Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetBody(ctx.Request.Body())
		}, Inline: func(ctx *fasthttp.RequestCtx) bool { return ctx.IsGet() }, ReadTimeout: time.Second}
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() { srv.ServeConn(a); close(done) }()
		go io.Copy(io.Discard, b)
		b.SetWriteDeadline(time.Now().Add(5 * time.Second))
		b.Write(append([]byte(http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"), frames...))
		b.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("ServeConn did not return after the client closed")
		}
	})
}
