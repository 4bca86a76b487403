package listener

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestConnCapTrustedProxy is issue 11 item 10: a trusted proxy is not one
// client. Behind it, more connections than the per-address cap are
// accepted (the visitors are many); all trusted proxies together are held
// to their own total; any other address keeps the per-address cap.
func TestConnCapTrustedProxy(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	perAddr := prometheus.NewCounter(prometheus.CounterOpts{Name: "per_address"})
	proxiesCap := prometheus.NewCounter(prometheus.CounterOpts{Name: "trusted_proxies"})
	trusted := netip.MustParsePrefix("127.0.0.1/32").Contains
	ln := PerIP(raw, 2, trusted, 5, [2]prometheus.Counter{perAddr, proxiesCap})
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	// dial connects from src and reports whether the listener kept the
	// connection (it is handed to the server) or closed it at once.
	dial := func(src string) bool {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Skipf("cannot dial from %s: %v", src, err)
		}
		t.Cleanup(func() { c.Close() })
		closed := make(chan struct{})
		go func() {
			var b [1]byte
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			c.Read(b[:]) // EOF when the listener closes it
			close(closed)
		}()
		select {
		case s := <-accepted:
			t.Cleanup(func() { s.Close() })
			return true
		case <-closed:
			return false
		}
	}
	for i, tc := range []struct {
		src  string
		kept bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1", true}, {"127.0.0.1", true}, {"127.0.0.1", true}, {"127.0.0.1", true}, // 5 > per-address 2
		{"127.0.0.1", false}, // past the proxies' total of 5
		{"127.0.0.2", true}, {"127.0.0.2", true},
		{"127.0.0.2", false}, // an ordinary address: 2
		{"127.0.0.3", true},
	} {
		if got := dial(tc.src); got != tc.kept {
			t.Fatalf("connection %d from %s: kept=%v, want %v", i, tc.src, got, tc.kept)
		}
	}
	if metricValue(perAddr) != 1 || metricValue(proxiesCap) != 1 {
		t.Fatalf("refusals counted: per address %v, trusted proxies %v; want 1 and 1", metricValue(perAddr), metricValue(proxiesCap))
	}
}

// metricValue reads a counter's value.
func metricValue(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}
