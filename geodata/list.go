package geodata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// ErrInvalid is wrapped by every error about a file that was refused: a list
// with a bad line, or a database that cannot be read or has the wrong layout.
var ErrInvalid = errors.New("invalid file")

// ParseError reports the line of an overrides or anonymizer list file that
// was refused. Callers reach it with errors.As.
type ParseError struct {
	// Line is the 1-based number of the refused line.
	Line int
	// Err says what is wrong with it.
	Err error
}

// Error returns "line N: reason".
func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }

// Override assigns a country to a network, as one line of an operator's
// overrides file.
type Override struct {
	// Prefix is the network, masked; IPv4-mapped IPv6 networks are stored as
	// IPv4.
	Prefix netip.Prefix
	// Country is the code every address of Prefix gets.
	Country Country
}

// String formats o as a line of an overrides file, "10.0.0.0/8 DE", which
// ParseOverrides reads back to o.
func (o Override) String() string { return o.Prefix.String() + " " + o.Country.String() }

// ParseOverrides reads an overrides file: one "CIDR COUNTRY" pair a line,
// separated by blanks, where CIDR is a network or a single address (IPv4 or
// IPv6) and COUNTRY is a code ParseCountry accepts (so also XX and T1).
// A # starts a comment; blank lines are skipped. The longest matching network
// wins at lookup, so nested networks are fine, but the same network twice
// with different countries is refused. The first bad line is reported as a
// *ParseError.
func ParseOverrides(r io.Reader) ([]Override, error) {
	var out []Override
	seen := make(map[netip.Prefix]int) // network -> index in out
	err := scanLines(r, func(fields []string) error {
		if len(fields) != 2 {
			return fmt.Errorf("want \"CIDR COUNTRY\", got %d fields", len(fields))
		}
		p, err := parsePrefix(fields[0])
		if err != nil {
			return err
		}
		c, err := parseCountry(fields[1])
		if err != nil {
			return err
		}
		if i, ok := seen[p]; ok {
			if out[i].Country != c {
				return fmt.Errorf("%s is already assigned to %s", p, out[i].Country)
			}
			return nil
		}
		seen[p] = len(out)
		out = append(out, Override{Prefix: p, Country: c})
		return nil
	})
	return out, err
}

// ParsePrefixList reads an anonymizer list file: one network (CIDR) or single
// address a line, IPv4 or IPv6. A # starts a comment; blank lines are skipped;
// duplicates are fine. The first bad line is reported as a *ParseError.
func ParsePrefixList(r io.Reader) ([]netip.Prefix, error) {
	var out []netip.Prefix
	err := scanLines(r, func(fields []string) error {
		if len(fields) != 1 {
			return fmt.Errorf("want one network a line, got %d fields", len(fields))
		}
		p, err := parsePrefix(fields[0])
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// maxLine bounds a line of a list file; a longer one is refused.
const maxLine = 4096

// scanLines calls fn with the blank-separated fields of every line that is
// not empty once its comment is removed, and wraps fn's error in a
// *ParseError. A UTF-8 byte order mark before the first line is skipped.
func scanLines(r io.Reader, fn func(fields []string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		if err := fn(fields); err != nil {
			return &ParseError{Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &ParseError{Line: n + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return err
	}
	return nil
}

// parsePrefix parses a network or a single address. A network with host bits
// set is refused, since it is ambiguous; an address's zone is dropped; an
// IPv4-mapped IPv6 network becomes the IPv4 network, as lookups unmap
// addresses.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad network %q", s)
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, fmt.Errorf("network %q has host bits set; did you mean %s?", s, m)
		}
		if a := p.Addr(); a.Is4In6() {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad address %q", s)
	}
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
