package domains

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// newResolver returns the resolver records are looked up with: the
// system's, or one that sends every query to addr (host:port), over UDP and
// TCP as the query needs (the mail area's resolver, configured by the same
// --dns-resolver).
func newResolver(addr string) *net.Resolver {
	if addr == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// notFound reports a DNS answer saying the name or its records do not
// exist (as opposed to a DNS that could not answer).
func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// lookupTXT returns the TXT records at name (each record's strings joined),
// none when the name or its TXT records do not exist, and an error only
// when the DNS could not answer.
func lookupTXT(ctx context.Context, r *net.Resolver, name string) ([]string, error) {
	txts, err := r.LookupTXT(ctx, name+".")
	if notFound(err) {
		return nil, nil
	}
	return txts, err
}

// lookupAddrs returns the addresses name resolves to (after any CNAME),
// none when it does not exist.
func lookupAddrs(ctx context.Context, r *net.Resolver, name string) ([]netip.Addr, error) {
	ips, err := r.LookupNetIP(ctx, "ip", name+".")
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.Unmap())
	}
	return out, nil
}

// lookupCNAME returns the canonical name of name (the end of its CNAME
// chain, lower case, without the trailing dot): name itself when it has no
// CNAME, "" when it does not exist.
func lookupCNAME(ctx context.Context, r *net.Resolver, name string) (string, error) {
	c, err := r.LookupCNAME(ctx, name+".")
	if notFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimSuffix(c, ".")), nil
}
