package edge

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/forward"
)

// WebSockets and other upgrades (RFC 9110 §7.8) to app and function
// origins, over HTTP/1.1: after Shield (serve runs it first), the request
// goes to the origin on a connection of its own (the private-network guard
// applies as to every origin connection) with Upgrade and Connection kept;
// when the origin answers 101 Switching Protocols, its answer is relayed
// and the two connections are spliced both ways until either side closes,
// nothing moves either way for UpgradeIdleTimeout, UpgradeMaxDuration has
// passed, or the edge stops. Any other answer of the origin is forwarded
// as an ordinary response. HTTP/2's extended CONNECT (RFC 8441) is not
// offered, so browsers open WebSockets over HTTP/1.1.

var (
	hdrUpgrade = []byte("Upgrade")
	valUpgrade = []byte("Upgrade")
)

// maxUpgradeRefusalBody bounds the body of an origin's non-101 answer to
// an upgrade request.
const maxUpgradeRefusalBody = 1 << 20

// isUpgrade reports whether h asks to switch protocols: an Upgrade field
// and the "upgrade" token in Connection.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if len(h.PeekBytes(hdrUpgrade)) == 0 {
		return false
	}
	for _, t := range splitTokens(h.PeekBytes(hdrConnection)) {
		if equalFoldASCII(t, "upgrade") {
			return true
		}
	}
	return false
}

// upgrade forwards an upgrade request to st's origin and splices the
// connections when the origin switches protocols.
func (e *Edge) upgrade(ctx *fasthttp.RequestCtx, st *site, client netip.Addr, p proto) {
	o := st.dep.origin
	out := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(out)
	up := append([]byte(nil), ctx.Request.Header.PeekBytes(hdrUpgrade)...)
	e.outbound(out, ctx, o, client)
	out.Header.SetBytesKV(hdrUpgrade, up)
	out.Header.SetBytesKV(hdrConnection, valUpgrade)

	oc, err := o.dial(e.cfg.OriginDialTimeout)
	if err != nil {
		e.metrics.upgrades[1].Inc()
		e.forwardError(ctx, st, p, err)
		return
	}
	oc.SetDeadline(time.Now().Add(e.cfg.OriginTimeout))
	bw := bufio.NewWriterSize(oc, 4<<10)
	if err = out.Write(bw); err == nil {
		err = bw.Flush()
	}
	br := bufio.NewReaderSize(oc, forward.ReadBuffer)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err == nil {
		err = resp.Header.Read(br)
	}
	if err != nil {
		oc.Close()
		e.metrics.upgrades[1].Inc()
		e.forwardError(ctx, st, p, err)
		return
	}
	e.metrics.originStatus(st.kind, resp.StatusCode())
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		// The origin declined: its answer goes back as any response does.
		e.metrics.upgrades[1].Inc()
		err := resp.ReadBody(br, maxUpgradeRefusalBody)
		oc.Close()
		if err != nil {
			e.forwardError(ctx, st, p, err)
			return
		}
		rh := &ctx.Response.Header
		resp.Header.CopyTo(rh)
		stripHopByHop(rh)
		scopeCookies(rh, st.host)
		rh.SetCanonical(hdrXCache, valMiss)
		e.securityHeaders(rh, p, true)
		ctx.Response.SetBody(resp.Body())
		return
	}
	scopeCookies(&resp.Header, st.host) // the 101's cookies too
	head := append([]byte(nil), resp.Header.Header()...)
	oc.SetDeadline(time.Time{})
	ctx.Response.SetStatusCode(fasthttp.StatusSwitchingProtocols) // counted and logged as 101
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { e.splice(c, oc, br, head) })
}

// splice relays head (the origin's 101) to the visitor, then copies both
// ways until one side closes, the connection idles past
// UpgradeIdleTimeout, or UpgradeMaxDuration passes.
func (e *Edge) splice(c, oc net.Conn, fromOrigin *bufio.Reader, head []byte) {
	u := &upgradedConn{c: c, oc: oc}
	if !e.upgraded.add(u) { // the edge is stopping
		u.close()
		return
	}
	defer e.upgraded.remove(u)
	defer u.close()
	e.metrics.upgrades[0].Inc()
	e.metrics.upgradesOpen.Inc()
	defer e.metrics.upgradesOpen.Dec()
	total := time.AfterFunc(e.cfg.UpgradeMaxDuration, u.close)
	defer total.Stop()

	c.SetDeadline(time.Time{})
	c.SetWriteDeadline(time.Now().Add(e.cfg.WriteTimeout))
	if _, err := c.Write(head); err != nil {
		return
	}
	idle := e.cfg.UpgradeIdleTimeout
	var last atomic.Int64 // unix nanoseconds of the last byte either way
	last.Store(time.Now().UnixNano())
	pipe := func(dst net.Conn, src io.Reader, srcConn net.Conn) error {
		buf := make([]byte, 32<<10)
		for {
			srcConn.SetReadDeadline(time.Now().Add(idle))
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				dst.SetWriteDeadline(time.Now().Add(e.cfg.WriteTimeout))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
					continue // the other direction is moving
				}
				return err
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(oc, c, c) // visitor -> origin
		closeWrite(oc)
	}()
	pipe(c, fromOrigin, oc) // origin -> visitor; its end ends the splice
	u.close()
	<-done
}

// closeWrite half-closes c when it can (the origin sees the visitor's
// end of stream), else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// upgradedConn is a spliced pair.
type upgradedConn struct {
	c, oc net.Conn
	once  sync.Once
}

func (u *upgradedConn) close() {
	u.once.Do(func() {
		u.c.Close()
		u.oc.Close()
	})
}

// upgradeSet tracks the spliced connections, to close them when the edge
// stops (fasthttp's graceful shutdown does not see hijacked connections).
type upgradeSet struct {
	mu     sync.Mutex
	m      map[*upgradedConn]struct{}
	closed bool
}

func (s *upgradeSet) add(u *upgradedConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.m == nil {
		s.m = map[*upgradedConn]struct{}{}
	}
	s.m[u] = struct{}{}
	return true
}

func (s *upgradeSet) remove(u *upgradedConn) {
	s.mu.Lock()
	delete(s.m, u)
	s.mu.Unlock()
}

// closeAll closes every spliced connection and refuses new ones.
func (s *upgradeSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	list := make([]*upgradedConn, 0, len(s.m))
	for u := range s.m {
		list = append(list, u)
	}
	s.mu.Unlock()
	for _, u := range list {
		u.close()
	}
}

// dial opens a connection of its own to the origin (TLS for https
// origins), through the same guarded dialer as the pool's.
func (o *origin) dial(timeout time.Duration) (net.Conn, error) {
	c, err := o.dialRaw(o.client.Addr, timeout)
	if err != nil {
		return nil, err
	}
	if !o.client.IsTLS {
		return c, nil
	}
	cfg := o.client.TLSConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(c, cfg)
	c.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return tc, nil
}
