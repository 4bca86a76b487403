package mail

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/svcplatform/platform/internal/freeport"
)

// dnsServer is a tiny authoritative DNS server for tests: TXT records by
// name over UDP and TCP on one loopback port, NXDOMAIN for names it does
// not hold, SERVFAIL for names marked failing.
type dnsServer struct {
	addr string
	mu   sync.Mutex
	txt  map[string][]string // by lowercase rooted name
	fail map[string]bool
}

func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{addr: addr, txt: map[string][]string{}, fail: map[string]bool{}}
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
			if out := d.answer(buf[:n]); out != nil {
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
					out := d.answer(q)
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
	return d
}

func rooted(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) + "." }

// set replaces the TXT records at name (none removes the name).
func (d *dnsServer) set(name string, txt ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(txt) == 0 {
		delete(d.txt, rooted(name))
		return
	}
	d.txt[rooted(name)] = txt
}

// failing makes queries for name answer SERVFAIL.
func (d *dnsServer) failing(name string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail[rooted(name)] = on
}

// answer builds the response to one query (nil for garbage).
func (d *dnsServer) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	txts, ok := d.txt[name]
	fail := d.fail[name]
	d.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	switch {
	case fail:
		rh.RCode = dnsmessage.RCodeServerFailure
	case !ok:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil
	}
	if err := b.Question(q); err != nil {
		return nil
	}
	if err := b.StartAnswers(); err != nil {
		return nil
	}
	if ok && !fail && q.Type == dnsmessage.TypeTXT {
		for _, t := range txts {
			// One record, its text cut into strings of at most 255 bytes
			// (long DKIM keys are published this way).
			var parts []string
			for len(t) > 255 {
				parts, t = append(parts, t[:255]), t[255:]
			}
			parts = append(parts, t)
			if err := b.TXTResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.TXTResource{TXT: parts}); err != nil {
				return nil
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
