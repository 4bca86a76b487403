// Package dnstest is a small authoritative DNS server for tests: TXT, A,
// AAAA and CNAME records by name, over UDP and TCP on one loopback port.
// CNAMEs are followed within the server's records as an authoritative
// server does; a name it does not hold is NXDOMAIN, a name holding other
// types answers NOERROR without records, and a name marked failing answers
// SERVFAIL. Records can change while it runs. Point a resolver (the
// platform's --dns-resolver, Pebble's -dnsserver) at Addr.
package dnstest

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/svcplatform/platform/internal/freeport"
)

// Server is a running test DNS server.
type Server struct {
	// Addr is host:port on 127.0.0.1, UDP and TCP.
	Addr string

	mu    sync.Mutex
	txt   map[string][]string // by lower-case rooted name
	addrs map[string][]netip.Addr
	cname map[string]string
	fail  map[string]bool
}

// Start runs a server on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: addr, txt: map[string][]string{}, addrs: map[string][]netip.Addr{}, cname: map[string]string{}, fail: map[string]bool{}}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := s.answer(buf[:n], 512); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					var l [2]byte
					if _, err := io.ReadFull(c, l[:]); err != nil {
						return
					}
					q := make([]byte, binary.BigEndian.Uint16(l[:]))
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					out := s.answer(q, 65535)
					if out == nil {
						return
					}
					c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(out))))
					c.Write(out)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		ln.Close()
		wg.Wait()
	})
	return s
}

func rooted(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) + "." }

// TXT replaces the TXT records at name (none removes them).
func (s *Server) TXT(name string, txt ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(txt) == 0 {
		delete(s.txt, rooted(name))
		return
	}
	s.txt[rooted(name)] = txt
}

// Addrs replaces the A and AAAA records at name (none removes them).
func (s *Server) Addrs(name string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(addrs) == 0 {
		delete(s.addrs, rooted(name))
		return
	}
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	s.addrs[rooted(name)] = as
}

// CNAME makes name an alias of target ("" removes it).
func (s *Server) CNAME(name, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if target == "" {
		delete(s.cname, rooted(name))
		return
	}
	s.cname[rooted(name)] = rooted(target)
}

// Failing makes queries for name answer SERVFAIL.
func (s *Server) Failing(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[rooted(name)] = on
}

// answer builds the response to one query (nil for garbage), truncated
// (TC set, no records) when it would exceed max bytes.
func (s *Server) answer(req []byte, max int) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	s.mu.Lock()
	rrs, rcode := s.records(strings.ToLower(q.Name.String()), q.Type)
	s.mu.Unlock()
	rh.RCode = rcode
	out, err := build(rh, q, rrs)
	if err != nil {
		return nil
	}
	if len(out) > max {
		rh.Truncated = true
		if out, err = build(rh, q, nil); err != nil {
			return nil
		}
	}
	return out
}

// records answers qtype at name, following CNAMEs (at most 8): held with
// s.mu.
func (s *Server) records(name string, qtype dnsmessage.Type) ([]dnsmessage.Resource, dnsmessage.RCode) {
	var out []dnsmessage.Resource
	hdr := func(n string, t dnsmessage.Type) dnsmessage.ResourceHeader {
		return dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(n), Type: t, Class: dnsmessage.ClassINET, TTL: 60}
	}
	for range 8 {
		if s.fail[name] {
			return nil, dnsmessage.RCodeServerFailure
		}
		if target, ok := s.cname[name]; ok {
			out = append(out, dnsmessage.Resource{Header: hdr(name, dnsmessage.TypeCNAME), Body: &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName(target)}})
			if qtype == dnsmessage.TypeCNAME {
				return out, dnsmessage.RCodeSuccess
			}
			name = target
			continue
		}
		txts, hasTXT := s.txt[name]
		addrs, hasAddrs := s.addrs[name]
		if !hasTXT && !hasAddrs {
			if len(out) > 0 {
				return out, dnsmessage.RCodeSuccess // a CNAME to a name held elsewhere
			}
			return nil, dnsmessage.RCodeNameError
		}
		switch qtype {
		case dnsmessage.TypeTXT:
			for _, t := range txts {
				// One record, its text cut into strings of at most 255 bytes.
				var parts []string
				for len(t) > 255 {
					parts, t = append(parts, t[:255]), t[255:]
				}
				parts = append(parts, t)
				out = append(out, dnsmessage.Resource{Header: hdr(name, dnsmessage.TypeTXT), Body: &dnsmessage.TXTResource{TXT: parts}})
			}
		case dnsmessage.TypeA, dnsmessage.TypeAAAA:
			for _, a := range addrs {
				switch {
				case a.Is4() && qtype == dnsmessage.TypeA:
					out = append(out, dnsmessage.Resource{Header: hdr(name, dnsmessage.TypeA), Body: &dnsmessage.AResource{A: a.As4()}})
				case a.Is6() && qtype == dnsmessage.TypeAAAA:
					out = append(out, dnsmessage.Resource{Header: hdr(name, dnsmessage.TypeAAAA), Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
				}
			}
		}
		return out, dnsmessage.RCodeSuccess
	}
	return nil, dnsmessage.RCodeServerFailure // a CNAME loop
}

func build(rh dnsmessage.Header, q dnsmessage.Question, rrs []dnsmessage.Resource) ([]byte, error) {
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, r := range rrs {
		var err error
		switch body := r.Body.(type) {
		case *dnsmessage.CNAMEResource:
			err = b.CNAMEResource(r.Header, *body)
		case *dnsmessage.TXTResource:
			err = b.TXTResource(r.Header, *body)
		case *dnsmessage.AResource:
			err = b.AResource(r.Header, *body)
		case *dnsmessage.AAAAResource:
			err = b.AAAAResource(r.Header, *body)
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
