package listener

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestLazyDeadlineRead(t *testing.T) {
	const short, long = 40 * time.Millisecond, 250 * time.Millisecond
	for _, tc := range []struct {
		name string
		set  func(c net.Conn, start time.Time)
		// the read must end by timeout no sooner than min and before max
		// after start; max 0: it must not time out (data arrives at long)
		min, max time.Duration
	}{
		{"moved later: fires at the later one", func(c net.Conn, s time.Time) {
			c.SetReadDeadline(s.Add(short))
			c.SetReadDeadline(s.Add(long))
		}, long, 5 * long},
		{"moved earlier: fires at once at the earlier one", func(c net.Conn, s time.Time) {
			c.SetReadDeadline(s.Add(time.Hour))
			c.SetReadDeadline(s.Add(short))
		}, short, long},
		{"cleared after arming: no timeout", func(c net.Conn, s time.Time) {
			c.SetReadDeadline(s.Add(short))
			c.SetReadDeadline(time.Time{})
		}, 0, 0},
		{"SetDeadline sets the read side", func(c net.Conn, s time.Time) {
			c.SetDeadline(s.Add(short))
		}, short, long},
		{"a deadline in the past fails the read at once", func(c net.Conn, s time.Time) {
			c.SetReadDeadline(s.Add(time.Hour))
			c.SetReadDeadline(s.Add(-time.Second))
		}, 0, short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, peer := tcpPair(t)
			c := NewDeadlineConn(raw)
			start := time.Now()
			tc.set(c, start)
			if tc.max == 0 {
				time.AfterFunc(long, func() { peer.Write([]byte("x")) })
			}
			var b [1]byte
			n, err := c.Read(b[:])
			took := time.Since(start)
			if tc.max == 0 {
				if err != nil || n != 1 {
					t.Fatalf("read = %d, %v after %v; want the byte the peer sent", n, err, took)
				}
				return
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read = %d, %v; want a timeout", n, err)
			}
			if took < tc.min || took > tc.max {
				t.Fatalf("timed out after %v, want between %v and %v", took, tc.min, tc.max)
			}
		})
	}
}

// TestLazyDeadlineInterrupt: another goroutine setting a deadline in the
// past ends a blocked read (how a graceful stop wakes idle connections).
func TestLazyDeadlineInterrupt(t *testing.T) {
	raw, _ := tcpPair(t)
	c := NewDeadlineConn(raw)
	c.SetReadDeadline(time.Now().Add(time.Hour))
	errc := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := c.Read(b[:])
		errc <- err
	}()
	time.AfterFunc(20*time.Millisecond, func() { c.SetReadDeadline(time.Now()) })
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read = %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked read was not interrupted")
	}
}

// TestLazyDeadlineWrite: a write the peer does not read times out at the
// wanted deadline, after a moved-later one, and reports what it wrote.
func TestLazyDeadlineWrite(t *testing.T) {
	raw, _ := tcpPair(t) // the peer never reads
	c := NewDeadlineConn(raw)
	start := time.Now()
	c.SetWriteDeadline(start.Add(30 * time.Millisecond))
	c.SetWriteDeadline(start.Add(200 * time.Millisecond))
	buf := make([]byte, 64<<20)
	n, err := c.Write(buf)
	took := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write = %d, %v; want a timeout", n, err)
	}
	if n <= 0 || n >= len(buf) {
		t.Fatalf("wrote %d of %d bytes, want some", n, len(buf))
	}
	if took < 200*time.Millisecond || took > 2*time.Second {
		t.Fatalf("timed out after %v, want at 200ms", took)
	}
}

// countingConn counts the deadlines armed on it.
type countingConn struct {
	net.Conn
	arms atomic.Int64
}

func (c *countingConn) SetReadDeadline(t time.Time) error {
	c.arms.Add(1)
	return c.Conn.SetReadDeadline(t)
}
func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.arms.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// The edge's default timeouts (edge.DefaultIdleTimeout and the others).
const (
	idleTimeout  = 90 * time.Second
	readTimeout  = 10 * time.Second
	writeTimeout = 5 * time.Minute
)

// TestLazyDeadlineArmsRarely: fasthttp's pattern per keep-alive request
// (idle deadline, read deadline, write deadline) arms the socket's timers
// once each for a thousand requests, not three thousand times.
func TestLazyDeadlineArmsRarely(t *testing.T) {
	raw, _ := tcpPair(t)
	cc := &countingConn{Conn: raw}
	c := NewDeadlineConn(cc)
	for i := 0; i < 1000; i++ {
		now := time.Now()
		c.SetReadDeadline(now.Add(idleTimeout))
		c.SetReadDeadline(now.Add(readTimeout))
		c.SetWriteDeadline(now.Add(writeTimeout))
	}
	if got := cc.arms.Load(); got > 3 {
		t.Fatalf("armed %d deadlines for 1000 requests, want at most 3", got)
	}
}

// BenchmarkRequestDeadlines: the three deadlines fasthttp sets per
// keep-alive request, on a TCP connection, directly and through
// DeadlineConn.
func BenchmarkRequestDeadlines(b *testing.B) {
	for _, lazy := range []bool{false, true} {
		name := "direct"
		if lazy {
			name = "lazy"
		}
		b.Run(name, func(b *testing.B) {
			raw, _ := tcpPair(b)
			c := raw
			if lazy {
				c = NewDeadlineConn(raw)
			}
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				c.SetReadDeadline(now.Add(idleTimeout))
				c.SetReadDeadline(now.Add(readTimeout))
				c.SetWriteDeadline(now.Add(writeTimeout))
			}
		})
	}
}

func TestLazyDeadlineListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := DeadlineListener{raw}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", raw.Addr().String()); err == nil {
			defer c.Close()
			c.Write([]byte("x"))
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*DeadlineConn); !ok {
		t.Fatalf("accepted %T, want *DeadlineConn", c)
	}
	raw.Close()
	if _, err := ln.Accept(); err == nil {
		t.Fatal("accept on a closed listener succeeded")
	}
}
