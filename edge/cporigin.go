package edge

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/svcplatform/platform/edge/internal/forward"
	"github.com/valyala/fasthttp"
)

// cpOriginPool keeps one origin per control-plane base URL for the life of
// the process (in production there is one), shared by every edge in it: a
// configuration change keeps the warm connections. The media playback host
// and the storage host each have one: requests pass the host's filter
// (transport, wrap) before they reach the control plane.
type cpOriginPool struct {
	prefix     string                    // the origins' key prefix (target)
	transport  fasthttp.RoundTripper     // the filter on fasthttp's client
	wrap       func(fwdClient) fwdClient // the filter on the forwarding client
	errUpgrade error                     // what an Upgrade request gets

	mu sync.Mutex
	m  map[string]*origin
}

func newCPOriginPool(prefix string, transport fasthttp.RoundTripper, wrap func(fwdClient) fwdClient, errUpgrade error) *cpOriginPool {
	return &cpOriginPool{prefix: prefix, transport: transport, wrap: wrap, errUpgrade: errUpgrade, m: map[string]*origin{}}
}

// get returns the origin of base, creating it on first use with the edge's
// default origin limits.
func (p *cpOriginPool) get(base string) (*origin, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.m[base]; o != nil {
		return o, nil
	}
	u, _, err := forward.ParseBase(base)
	if err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("origin %q is not an http(s) base URL", base)
	}
	// The control plane is the platform itself: no guard (it is on
	// loopback or a private network, and in `platform serve` it is the
	// API listener, which app origins may never be).
	fc, err := forward.New(base, forward.Options{
		AllowPrivate: true,
		DialTimeout:  DefaultOriginDialTimeout,
		IdleTimeout:  DefaultOriginIdleTimeout,
		KeepAlive:    DefaultOriginKeepAlive,
		Timeout:      DefaultOriginTimeout,
		MaxConns:     DefaultOriginMaxConns,
		Transport:    p.transport,
	})
	if err != nil {
		return nil, err
	}
	errUpgrade := p.errUpgrade
	o := &origin{key: p.prefix + base, base: base, managed: true,
		host: fc.Host, client: fc.HC, fwd: p.wrap(fc),
		dialRaw: func(string, time.Duration) (net.Conn, error) { return nil, errUpgrade }}
	p.m[base] = o
	return o, nil
}
