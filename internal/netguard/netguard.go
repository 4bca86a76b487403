// Package netguard keeps the platform's outgoing requests to addresses that
// users name (app and function origins, webhook URLs) off the platform's own
// network. Its table is the IANA IPv4 and IPv6 Special-Purpose Address
// Registries: every block that is not globally reachable (loopback,
// private, shared, link-local, documentation, benchmarking, reserved,
// discard, ...) is refused, as are multicast and IPv6 outside global
// unicast (2000::/3), unless the operator allows private networks
// (--allow-private-networks, for tests and local development). Addresses
// that carry an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4) are
// judged by that IPv4 address. The platform's own listeners are refused
// always.
//
// The check that matters runs at connect time on the address a name
// resolved to (Dialer sets net.Dialer.Control), so a name that resolves to a
// public address at deploy and to 127.0.0.1 later (DNS rebinding) is still
// refused. CheckURL runs the same rules early, at deploy, for a clear error;
// it never connects, so it does not reveal whether a port answers.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by every refusal: the address is on a
// network the platform does not connect to for its users.
var ErrForbiddenAddress = errors.New("netguard: address not allowed")

// ErrInvalidURL is wrapped by CheckURL's errors for a URL that is not a bare
// http(s) address with a host.
var ErrInvalidURL = errors.New("netguard: invalid URL")

// lookupTimeout bounds the name resolution of CheckURL.
const lookupTimeout = 3 * time.Second

// guard is the Control of a guarded dialer.
type guard struct {
	allowPrivate bool
	own          []netip.AddrPort
	interfaces   func() ([]net.Addr, error)
}

// check refuses address (an "ip:port" the dialer is about to connect to).
func (g *guard) check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrForbiddenAddress, address)
	}
	a := ap.Addr().Unmap().WithZone("")
	if g.isOwn(netip.AddrPortFrom(a, ap.Port())) {
		return fmt.Errorf("%w: %s is one of the platform's own listeners", ErrForbiddenAddress, netip.AddrPortFrom(a, ap.Port()))
	}
	if g.allowPrivate {
		return nil
	}
	if blocked, why := verdict(a); blocked {
		return fmt.Errorf("%w: %s is not globally reachable (%s)", ErrForbiddenAddress, a, why)
	}
	return nil
}

// isOwn reports whether ap is one of the platform's listeners. A listener
// on an unspecified address (":9090") is every address of this host on that
// port.
func (g *guard) isOwn(ap netip.AddrPort) bool {
	for _, o := range g.own {
		if o.Port() != ap.Port() {
			continue
		}
		oa := o.Addr().Unmap()
		if oa == ap.Addr() {
			return true
		}
		if oa.IsUnspecified() && g.local(ap.Addr()) {
			return true
		}
	}
	return false
}

// local reports whether a is an address of one of this host's interfaces;
// when they cannot be listed, every address counts as local (fail closed).
func (g *guard) local(a netip.Addr) bool {
	addrs, err := g.interfaces()
	if err != nil {
		return true
	}
	for _, ia := range addrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if x, ok := netip.AddrFromSlice(ip); ok && x.Unmap() == a {
			return true
		}
	}
	return false
}

// Dialer returns a dialer that refuses to connect to a Blocked address
// unless allowPrivate, and to the platform's own listeners (own: the API,
// the admin address with /metrics, the edge; an unspecified address stands
// for every address of this host) always: allowing private networks for
// tests or local development never publishes the platform's own endpoints. The check runs in
// net.Dialer.Control on the address about to be connected to, after name
// resolution, so it holds for every address a name resolves to. A refusal
// wraps ErrForbiddenAddress. Set Timeout and the like on the result as
// needed.
func Dialer(allowPrivate bool, own ...netip.AddrPort) *net.Dialer {
	g := &guard{allowPrivate: allowPrivate, own: append([]netip.AddrPort(nil), own...), interfaces: net.InterfaceAddrs}
	return &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error { return g.check(address) }}
}

// CheckURL checks an http or https base URL that a user gave (an origin, a
// webhook) at the time it is saved: the scheme, a host, and, unless
// allowPrivate, that neither the host (an address literal, "localhost" and
// names under .localhost) nor any address the name resolves to now is
// Blocked. It never connects. A name that does not resolve is accepted (it
// may be created later); Dialer checks again at every connection. Errors
// wrap ErrInvalidURL or ErrForbiddenAddress and do not say whether anything
// listens there.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%w: %q must be an http or https address with a host", ErrInvalidURL, raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: %q has an invalid port", ErrInvalidURL, raw)
		}
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		if blocked, why := verdict(a); blocked {
			return fmt.Errorf("%w: %s is not globally reachable (%s)", ErrForbiddenAddress, a.WithZone(""), why)
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %s names this host", ErrForbiddenAddress, host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if blocked, why := verdict(a); blocked {
			return fmt.Errorf("%w: %s resolves to %s, which is not globally reachable (%s)", ErrForbiddenAddress, host, a.Unmap(), why)
		}
	}
	return nil
}
