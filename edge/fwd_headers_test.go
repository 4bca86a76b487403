package edge

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// parseRequestHeader reads a raw request head as the edge's server does.
func parseRequestHeader(tb testing.TB, raw string) *fasthttp.RequestHeader {
	tb.Helper()
	var h fasthttp.RequestHeader
	if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		tb.Fatalf("parse %q: %v", raw, err)
	}
	return &h
}

// fieldNames lists the field names of h as written (lower case, sorted
// by appearance), without Host and Content-Length.
func requestFieldLines(h *fasthttp.RequestHeader) string {
	var b strings.Builder
	for k, v := range h.All() {
		fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(string(k)), v)
	}
	return b.String()
}

func TestCopyRequestHeader(t *testing.T) {
	for _, tc := range []struct {
		name      string
		raw       string
		keep      []string // fields that must be copied (lower-case "name: value")
		drop      []string // field names that must be gone (lower case)
		wantClose bool
	}{
		{
			name: "plain",
			raw:  "GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nUser-Agent: ua\r\nX-Custom: 1\r\n\r\n",
			keep: []string{"accept: */*", "user-agent: ua", "x-custom: 1", "host: a.test"},
		},
		{
			name: "every hop-by-hop field",
			raw: "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n" +
				"Proxy-Authorization: Basic eA==\r\nTE: trailers\r\nUpgrade: h2c\r\nExpect: 100-continue\r\nAccept: */*\r\n\r\n",
			keep: []string{"accept: */*"},
			drop: []string{"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade", "expect"},
		},
		{
			name: "Connection names fields, any case",
			raw:  "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: X-Secret , x-other,keep-alive\r\nX-Secret: s\r\nX-Other: o\r\nX-Kept: k\r\n\r\n",
			keep: []string{"x-kept: k"},
			drop: []string{"x-secret", "x-other", "connection"},
		},
		{
			name: "Connection: close",
			raw:  "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\nAccept: */*\r\n\r\n",
			keep: []string{"accept: */*"},
			drop: []string{"connection"},
		},
		{
			name: "repeated fields kept",
			raw:  "GET /x HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\nCookie: a=1\r\nAccept: */*\r\n\r\n",
			keep: []string{"x-forwarded-for: 1.1.1.1", "x-forwarded-for: 2.2.2.2", "cookie: a=1"},
		},
		{
			name: "more fields to drop than one pass records",
			raw: "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: a1, a2, a3, a4, a5, a6, a7, a8, a9\r\n" +
				"A1: 1\r\nA2: 2\r\nA3: 3\r\nA4: 4\r\nA5: 5\r\nA6: 6\r\nA7: 7\r\nA8: 8\r\nA9: 9\r\nTE: trailers\r\nB: kept\r\n\r\n",
			keep: []string{"b: kept"},
			drop: []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "te", "connection"},
		},
	} {
		for _, mode := range []string{"as received", "built (HTTP/2, HTTP/3 bridges)"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				in := parseRequestHeader(t, tc.raw)
				if mode != "as received" {
					// The bridges fill the header field by field: no raw block.
					var built fasthttp.RequestHeader
					built.SetMethodBytes(in.Method())
					built.SetRequestURIBytes(in.RequestURI())
					for k, v := range in.All() {
						built.AddBytesKV(k, v)
					}
					if len(built.RawHeaders()) != 0 {
						t.Fatal("built header has a raw block")
					}
					in = &built
				}
				var out fasthttp.RequestHeader
				copyRequestHeader(&out, in)
				got := requestFieldLines(&out)
				for _, k := range tc.keep {
					if !strings.Contains(got, k+"\n") {
						t.Errorf("missing %q in\n%s", k, got)
					}
				}
				for _, name := range tc.drop {
					if strings.Contains("\n"+got, "\n"+name+":") {
						t.Errorf("%q still there:\n%s", name, got)
					}
				}
				if out.ConnectionClose() {
					t.Errorf("Connection: close copied")
				}
				if len(out.Peek("Trailer")) != 0 {
					t.Errorf("Trailer copied")
				}
			})
		}
	}
}

func TestStripHopByHopResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		keep []string
		drop []string
	}{
		{
			name: "plain",
			raw:  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: 0\r\n\r\n",
			keep: []string{"Content-Type", "Cache-Control"},
		},
		{
			name: "hop-by-hop fields",
			raw: "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nTE: x\r\n" +
				"X-App: 1\r\nContent-Length: 0\r\n\r\n",
			keep: []string{"X-App"},
			drop: []string{"Keep-Alive", "Proxy-Authenticate", "Proxy-Connection", "Upgrade", "Te"},
		},
		{
			name: "Connection names fields",
			raw:  "HTTP/1.1 200 OK\r\nConnection: x-internal, keep-alive\r\nX-Internal: secret\r\nX-App: 1\r\nContent-Length: 0\r\n\r\n",
			keep: []string{"X-App"},
			drop: []string{"X-Internal"},
		},
		{
			name: "past one pass's record",
			raw: "HTTP/1.1 200 OK\r\nConnection: b1, b2, b3, b4, b5, b6, b7, b8, b9\r\nB1: 1\r\nB2: 2\r\nB3: 3\r\nB4: 4\r\nB5: 5\r\nB6: 6\r\nB7: 7\r\n" +
				"B8: 8\r\nB9: 9\r\nX-App: 1\r\nContent-Length: 0\r\n\r\n",
			keep: []string{"X-App"},
			drop: []string{"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			if err := h.Read(bufio.NewReader(strings.NewReader(tc.raw))); err != nil {
				t.Fatal(err)
			}
			stripHopByHop(&h)
			for _, k := range tc.keep {
				if len(h.Peek(k)) == 0 {
					t.Errorf("%s removed:\n%s", k, h.String())
				}
			}
			for _, k := range tc.drop {
				if h.Peek(k) != nil {
					t.Errorf("%s kept:\n%s", k, h.String())
				}
			}
		})
	}
}

func TestSecurityHeadersKeep(t *testing.T) {
	e := &Edge{altSvc: []byte(`h3=":443"`)}
	for _, tc := range []struct {
		name   string
		origin map[string]string
		keep   bool
		want   map[string]string
	}{
		{"none set", nil, true, map[string]string{"Strict-Transport-Security": "max-age=31536000", "X-Frame-Options": "SAMEORIGIN",
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "strict-origin-when-cross-origin", "Alt-Svc": `h3=":443"`}},
		{"origin's kept", map[string]string{"strict-transport-security": "max-age=1", "x-frame-options": "DENY",
			"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}, true,
			map[string]string{"Strict-Transport-Security": "max-age=1", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}},
		{"origin's replaced without keep", map[string]string{"X-Frame-Options": "DENY"}, false,
			map[string]string{"X-Frame-Options": "SAMEORIGIN"}},
		{"only one kept", map[string]string{"Referrer-Policy": "no-referrer"}, true,
			map[string]string{"Referrer-Policy": "no-referrer", "X-Frame-Options": "SAMEORIGIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			for k, v := range tc.origin {
				h.Set(k, v)
			}
			e.securityHeaders(&h, protoHTTPS, tc.keep)
			for k, v := range tc.want {
				if got := string(h.Peek(k)); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
				if n := len(h.PeekAll(k)); n != 1 {
					t.Errorf("%s appears %d times", k, n)
				}
			}
		})
	}
}

// FuzzConnectionTokens checks the one-pass Connection parsing against
// splitTokens: a name is listed exactly when splitTokens finds it.
func FuzzConnectionTokens(f *testing.F) {
	for _, s := range []string{"close", "keep-alive, X-A", " x-a ,, X-B", ",", "", "a,b,c,d,e,f,g,h,i,j", "\tX-Tab\t, y"} {
		f.Add(s, "X-A")
	}
	f.Fuzz(func(t *testing.T, conn, name string) {
		if name == "" {
			return
		}
		want := false
		for _, tok := range splitTokens([]byte(conn)) {
			if bytes.EqualFold(tok, []byte(name)) && isASCII(name) && isASCII(string(tok)) {
				want = true
			}
		}
		if !isASCII(conn) || !isASCII(name) {
			return
		}
		if got := listedIn([]byte(conn), []byte(name)); got != want {
			t.Fatalf("listedIn(%q, %q) = %v, want %v", conn, name, got, want)
		}
		if opts := connectionOptions([]byte(conn)); opts == nil {
			for _, tok := range splitTokens([]byte(conn)) {
				if !equalFoldASCII(tok, "close") && !equalFoldASCII(tok, "keep-alive") {
					t.Fatalf("connectionOptions(%q) = nil with option %q", conn, tok)
				}
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func BenchmarkForwardHeaders(b *testing.B) {
	in := parseRequestHeader(b, "GET /api/items HTTP/1.1\r\nHost: benchapp.localhost\r\nX-Forwarded-For: 2.0.1.1\r\n"+
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36\r\nAccept: */*\r\n\r\n")
	var resp fasthttp.ResponseHeader
	raw := "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 22 Nov 2026 21:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 256\r\n" +
		"Connection: keep-alive\r\nCache-Control: no-store\r\n\r\n"
	if err := resp.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		b.Fatal(err)
	}
	e := &Edge{altSvc: []byte(`h3=":443"`)}
	var out fasthttp.RequestHeader
	var rh fasthttp.ResponseHeader
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copyRequestHeader(&out, in)
		}
	})
	b.Run("response", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp.CopyTo(&rh)
			stripHopByHop(&rh)
			e.securityHeaders(&rh, protoHTTPS, true)
		}
	})
}

// BenchmarkForwardHeadersBefore is the filtering the forwarding path did
// before the one-pass version (every hop-by-hop name deleted in turn), kept
// to compare with BenchmarkForwardHeaders in the same run.
func BenchmarkForwardHeadersBefore(b *testing.B) {
	in := parseRequestHeader(b, "GET /api/items HTTP/1.1\r\nHost: benchapp.localhost\r\nX-Forwarded-For: 2.0.1.1\r\n"+
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36\r\nAccept: */*\r\n\r\n")
	var resp fasthttp.ResponseHeader
	raw := "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 22 Nov 2026 21:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 256\r\n" +
		"Connection: keep-alive\r\nCache-Control: no-store\r\n\r\n"
	if err := resp.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		b.Fatal(err)
	}
	var out fasthttp.RequestHeader
	var rh fasthttp.ResponseHeader
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		var conn [64]byte
		for b.Loop() {
			in.CopyTo(&out)
			c := append(conn[:0], in.PeekBytes(hdrConnection)...)
			for _, name := range hopByHop {
				out.DelBytes(name)
			}
			for _, name := range splitTokens(c) {
				out.DelBytes(name)
			}
			out.DelBytes(hdrExpect)
		}
	})
	b.Run("response", func(b *testing.B) {
		b.ReportAllocs()
		var conn [64]byte
		alt := []byte(`h3=":443"`)
		for b.Loop() {
			resp.CopyTo(&rh)
			c := append(conn[:0], rh.PeekBytes(hdrConnection)...)
			for _, name := range hopByHop {
				if string(name) == "Connection" || string(name) == "Transfer-Encoding" {
					continue
				}
				rh.DelBytes(name)
			}
			for _, name := range splitTokens(c) {
				rh.DelBytes(name)
			}
			for _, kv := range [...][2][]byte{{hdrHSTS, valHSTS}, {hdrNoSniff, valNoSniff}, {hdrFrameOptions, valFrameOptions}, {hdrReferrer, valReferrer}} {
				if rh.PeekBytes(kv[0]) == nil {
					rh.SetCanonical(kv[0], kv[1])
				}
			}
			rh.SetCanonical(hdrAltSvc, alt)
		}
	})
}
