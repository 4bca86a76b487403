package mail

import (
	"context"
	"errors"
	"net"
	"strings"
)

// newResolver returns the resolver sending domains are looked up with: the
// system's, or one that sends every query to addr (host:port), over UDP and
// TCP as the query needs.
func newResolver(addr string) *net.Resolver {
	if addr == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// lookupTXT returns the TXT records at name (each record's strings joined),
// none when the name or its TXT records do not exist, and an error only
// when the DNS could not answer.
func lookupTXT(ctx context.Context, r *net.Resolver, name string) ([]string, error) {
	txts, err := r.LookupTXT(ctx, name+".")
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		return nil, nil
	}
	return txts, err
}

// parseTags reads a DKIM tag list ("v=DKIM1; k=rsa; p=MIIB..."): tag names
// are case-sensitive, whitespace around tags and values is dropped, and a
// tag given twice or without "=" makes the list invalid (RFC 6376 3.2).
func parseTags(s string) (map[string]string, bool) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, true
}

// dkimStatus says whether one of txts is a DKIM key record carrying
// public (base64, whitespace ignored): verified, mismatch (a DKIM record
// with another key) or missing.
func dkimStatus(txts []string, public string) string {
	status := StatusMissing
	for _, t := range txts {
		tags, ok := parseTags(t)
		if !ok {
			continue
		}
		if v, has := tags["v"]; has && v != "DKIM1" {
			continue
		}
		p, has := tags["p"]
		if !has {
			continue
		}
		if removeSpace(p) == public {
			return StatusVerified
		}
		status = StatusMismatch
	}
	return status
}

// spfStatus says whether txts hold exactly one SPF record and it includes
// include: verified, mismatch (no include, or more than one SPF record,
// which makes SPF fail for every sender) or missing.
func spfStatus(txts []string, include string) (string, string) {
	var spf []string
	for _, t := range txts {
		if isSPF(t) {
			spf = append(spf, t)
		}
	}
	switch {
	case len(spf) == 0:
		return StatusMissing, ""
	case len(spf) > 1:
		return StatusMismatch, "the domain has more than one SPF record: merge them into one"
	case spfIncludes(spf[0], include):
		return StatusVerified, ""
	default:
		return StatusMismatch, "the SPF record does not include:" + include + ": add it before the all mechanism"
	}
}

// isSPF reports an SPF record: "v=spf1" alone or followed by a space.
func isSPF(t string) bool {
	t = strings.TrimSpace(t)
	return len(t) >= 6 && strings.EqualFold(t[:6], "v=spf1") && (len(t) == 6 || t[6] == ' ')
}

// spfIncludes reports whether the SPF record has a passing include: of
// domain ("include:d" or "+include:d", case-insensitive).
func spfIncludes(record, domain string) bool {
	for _, term := range strings.Fields(record) {
		term = strings.TrimPrefix(term, "+")
		if len(term) > 8 && strings.EqualFold(term[:8], "include:") &&
			strings.EqualFold(strings.TrimSuffix(term[8:], "."), domain) {
			return true
		}
	}
	return false
}

func removeSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
}
