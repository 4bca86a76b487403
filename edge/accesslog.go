package edge

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/geodata"
	"github.com/svcplatform/platform/internal/jsonesc"
	"github.com/svcplatform/platform/rules"
)

// Access logs: one JSON line per request, off by default (Config.AccessLog).
//
//	{"time":"2026-11-22T16:22:11.123456Z","proto":"h2","host":"shop.example.app","method":"GET",
//	 "path":"/cart","status":200,"bytes":5120,"client":"203.0.113.9","country":"DE",
//	 "shield":"allow","rule":"none","cache":"MISS","upstream_ms":12.431,"duration_ms":13.02}
//
// bytes is the body length answered (for a streamed body, its declared
// Content-Length, -1 when it has none); cache is HIT, MISS, REVALIDATED
// or "-" (no cache involved); upstream_ms is the time to the origin's
// response header (0 without a forward). path is the request path with
// its query. Lines are built in a buffer shared under a lock (no
// allocation per line once it has grown) and written when it holds 32 KiB
// and at least every second, so a burst costs one write per 32 KiB, and on
// Close. A failed write drops its lines and counts
// platform_edge_access_log_errors_total; serving never waits on a disk.

// accessFlushBytes is how much is buffered before a write.
const accessFlushBytes = 32 << 10

// accessFlushInterval bounds how long a line waits in the buffer.
const accessFlushInterval = time.Second

// maxAccessField bounds the bytes of one logged field (a path, a host).
const maxAccessField = 2048

type accessLog struct {
	mu     sync.Mutex
	w      io.Writer
	file   *os.File // closed by Close; nil for stdout and a given writer
	buf    []byte
	drops  prometheus.Counter
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

// openAccessLog opens the access log: dst is a file path or "-" for
// standard output; w, when not nil, replaces both.
func openAccessLog(dst string, w io.Writer, drops prometheus.Counter) (*accessLog, error) {
	l := &accessLog{w: w, drops: drops, buf: make([]byte, 0, 2*accessFlushBytes), stop: make(chan struct{}), done: make(chan struct{})}
	switch {
	case w != nil:
	case dst == "-":
		l.w = os.Stdout
	default:
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("access log: %w", err)
		}
		l.w, l.file = f, f
	}
	go l.flushLoop()
	return l, nil
}

func (l *accessLog) flushLoop() {
	defer close(l.done)
	t := time.NewTicker(accessFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.flushLocked()
			l.mu.Unlock()
		}
	}
}

// flushLocked writes the buffered lines. Called with l.mu held.
func (l *accessLog) flushLocked() {
	if len(l.buf) == 0 {
		return
	}
	if _, err := l.w.Write(l.buf); err != nil && l.drops != nil {
		l.drops.Inc()
	}
	l.buf = l.buf[:0]
}

// Close writes what is buffered and closes the file.
func (l *accessLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	if l.file != nil {
		return l.file.Close()
	}
	return nil
}

// accessEntry is what serve knows of a request when it is answered.
type accessEntry struct {
	start    time.Time
	proto    proto
	client   netip.Addr
	decision rules.Decision
	upstream time.Duration
}

var protoNames = [...]string{protoHTTP: "http", protoHTTPS: "h1", protoH3: "h3", protoH2: "h2"}

// log appends one line for the request in ctx. It does not allocate once
// the buffer has grown.
func (l *accessLog) log(ctx *fasthttp.RequestCtx, a *accessEntry, geo geodata.Locator) {
	now := time.Now()
	country := geodata.Unknown
	if geo != nil && a.client.IsValid() {
		country = geo.Country(a.client)
	}
	resp := &ctx.Response
	n := int64(len(resp.Body()))
	if resp.IsBodyStream() {
		n = int64(resp.Header.ContentLength())
	}
	cache := resp.Header.PeekBytes(hdrXCache)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	b := l.buf
	b = append(b, `{"time":"`...)
	b = now.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, `","proto":"`...)
	b = append(b, protoNames[a.proto]...)
	b = append(b, `","host":`...)
	b = appendJSONString(b, ctx.Request.Header.Host())
	b = append(b, `,"method":`...)
	b = appendJSONString(b, ctx.Request.Header.Method())
	b = append(b, `,"path":`...)
	b = appendJSONString(b, ctx.Request.Header.RequestURI())
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(resp.StatusCode()), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, `,"client":"`...)
	b = a.client.AppendTo(b)
	b = append(b, `","country":"`...)
	b = append(b, country[0], country[1])
	b = append(b, `","shield":"`...)
	b = append(b, verdictNames[a.decision.Verdict%3]...)
	b = append(b, `","rule":"`...)
	b = append(b, ruleNames[a.decision.Rule%4]...)
	b = append(b, `","cache":`...)
	if len(cache) == 0 {
		b = append(b, `"-"`...)
	} else {
		b = appendJSONString(b, cache)
	}
	b = append(b, `,"upstream_ms":`...)
	b = strconv.AppendFloat(b, float64(a.upstream.Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(now.Sub(a.start).Microseconds())/1000, 'f', 3, 64)
	b = append(b, "}\n"...)
	l.buf = b
	if len(l.buf) >= accessFlushBytes {
		l.flushLocked()
	}
}

var (
	verdictNames = [3]string{rules.Allow.String(), rules.Refuse.String(), rules.WouldRefuse.String()}
	ruleNames    = [4]string{rules.Rule(0).String(), rules.Rule(1).String(), rules.Rule(2).String(), rules.Rule(3).String()}
)

// appendJSONString appends s as a JSON string, at most maxAccessField
// bytes of it; invalid UTF-8 becomes U+FFFD, control characters, quotes
// and backslashes are escaped, so a request cannot forge a line.
func appendJSONString(b, s []byte) []byte {
	if len(s) > maxAccessField {
		s = s[:maxAccessField]
	}
	return jsonesc.Append(b, s)
}
