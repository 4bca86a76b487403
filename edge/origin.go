package edge

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/forward"
)

// origin is a server app's or function's origin with its pooled client.
// Origins are shared by every table that names the same base URL, so a
// configuration change keeps the warm connections.
type origin struct {
	key     string // base, or "managed " + base: the pool key
	base    string
	managed bool
	host    []byte // host:port, the Host sent when the visitor sent none
	client  *fasthttp.HostClient
	// fwd sends forwarded requests over client's connections
	// (edge/internal/forward).
	fwd fwdClient
	// pass holds the hit-for-pass marks of the cache keys it answers
	// (fwd_pass.go).
	pass *passTable
	// dialRaw connects to addr through the guarded dialer (upgrades open
	// connections of their own with it).
	dialRaw func(addr string, timeout time.Duration) (net.Conn, error)
}

// fwdClient sends a request to one origin and reads its response: a
// forward.Client, or the media origin's filter in front of one.
type fwdClient interface {
	RoundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (retry bool, err error)
}

// originPool keeps one origin per base URL.
type originPool struct {
	cfg *Config
	mu  sync.Mutex
	m   map[string]*origin
}

func newOriginPool(cfg *Config) *originPool {
	return &originPool{cfg: cfg, m: map[string]*origin{}}
}

// get returns the origin of base ("http://host:port" or "https://host"),
// creating its client on first use. A managed origin is a process the
// platform itself runs for a deployment: it is exempt from the private
// network guard (netguard), which applies to every other origin unless
// Config.AllowPrivateNetworks.
func (op *originPool) get(base string, managed bool) (*origin, error) {
	key := base
	if managed {
		key = "managed " + base
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if o := op.m[key]; o != nil {
		return o, nil
	}
	fc, err := forward.New(base, forward.Options{
		AllowPrivate: op.cfg.AllowPrivateNetworks || managed,
		Own:          op.cfg.own,
		DialTimeout:  op.cfg.OriginDialTimeout,
		IdleTimeout:  op.cfg.OriginIdleTimeout,
		KeepAlive:    op.cfg.OriginKeepAlive,
		Timeout:      op.cfg.OriginTimeout,
		MaxConns:     op.cfg.OriginMaxConns,
	})
	if err != nil {
		return nil, err
	}
	o := &origin{key: key, base: base, managed: managed, host: fc.Host,
		client: fc.HC, fwd: fc, dialRaw: fc.Dial, pass: newPassTable()}
	op.m[key] = o
	return o, nil
}

// retain drops the origins no table names any more (by pool key), closing
// their idle connections.
func (op *originPool) retain(keep map[string]bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	for key, o := range op.m {
		if !keep[key] {
			o.client.CloseIdleConnections()
			delete(op.m, key)
		}
	}
}

// ownAddrs parses the platform's own listener addresses (Config.OwnListeners)
// as address:port pairs; a host name other than an address is skipped (its
// addresses are the host's, and loopback is refused anyway).
func ownAddrs(list []string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, s := range list {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, fmt.Errorf("own listener %q: %w", s, err)
		}
		if host == "" {
			host = "0.0.0.0"
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		ap, err := netip.ParseAddrPort(net.JoinHostPort(a.String(), port))
		if err != nil {
			return nil, fmt.Errorf("own listener %q: %w", s, err)
		}
		out = append(out, ap)
	}
	return out, nil
}
