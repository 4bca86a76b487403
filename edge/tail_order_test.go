//go:build linux

package edge

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// arrivalPair returns a client connection and the server's end of it,
// registered with w.
func arrivalPair(t *testing.T, w *arrivalWaker) (client net.Conn, server *arrivalConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	sc, err := orderedListener(ln, w).Accept()
	if err != nil {
		t.Fatal(err)
	}
	ac, ok := sc.(*arrivalConn)
	if !ok {
		t.Fatalf("accepted %T, want *arrivalConn", sc)
	}
	t.Cleanup(func() { ac.Close() })
	return client, ac
}

func newTestWaker(t *testing.T) *arrivalWaker {
	t.Helper()
	w := newArrivalWaker(ReadOrderArrival)
	if w == nil {
		t.Fatal("no arrival waker on Linux")
	}
	t.Cleanup(w.close)
	return w
}

// parkedSignal makes c report each time its reader parks.
func parkedSignal(c *arrivalConn) <-chan struct{} {
	ch := make(chan struct{}, 16)
	c.parked = func() { ch <- struct{}{} }
	return ch
}

func TestArrivalConnReads(t *testing.T) {
	w := newTestWaker(t)
	client, c := arrivalPair(t, w)
	parked := parkedSignal(c)

	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v; want 0, nil", n, err)
	}
	// Data already there: no wait.
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	got := 0
	for got < 4 {
		n, err := c.Read(buf[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if string(buf[:got]) != "ping" {
		t.Fatalf("read %q, want ping", buf[:got])
	}
	// Nothing there: the reader parks, and the waker wakes it when data comes.
	type result struct {
		s   string
		err error
	}
	res := make(chan result, 1)
	go func() {
		n, err := c.Read(buf)
		res <- result{string(buf[:n]), err}
	}()
	<-parked
	if _, err := client.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || r.s != "pong" {
		t.Fatalf("parked Read = %q, %v; want pong", r.s, r.err)
	}
	// Writes are the connection's own.
	if _, err := c.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf[:4]); err != nil || string(buf[:4]) != "back" {
		t.Fatalf("client read %q, %v", buf[:4], err)
	}
	// The peer's close is EOF, also for a parked reader.
	go func() {
		n, err := c.Read(buf)
		res <- result{string(buf[:n]), err}
	}()
	<-parked
	client.Close()
	if r := <-res; r.err != io.EOF {
		t.Fatalf("Read after the peer closed = %q, %v; want EOF", r.s, r.err)
	}
}

func TestArrivalConnDeadlines(t *testing.T) {
	w := newTestWaker(t)
	buf := make([]byte, 8)
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
	}

	t.Run("passed", func(t *testing.T) {
		_, c := arrivalPair(t, w)
		c.SetReadDeadline(time.Now().Add(-time.Second))
		if _, err := c.Read(buf); !isTimeout(err) {
			t.Fatalf("Read past the deadline: %v, want a timeout", err)
		}
	})
	t.Run("fires while parked", func(t *testing.T) {
		_, c := arrivalPair(t, w)
		start := time.Now()
		c.SetReadDeadline(start.Add(30 * time.Millisecond))
		_, err := c.Read(buf)
		if !isTimeout(err) {
			t.Fatalf("Read: %v, want a timeout", err)
		}
		if e := time.Since(start); e < 30*time.Millisecond {
			t.Fatalf("timed out after %v, before the deadline", e)
		}
	})
	t.Run("moved later while parked", func(t *testing.T) {
		client, c := arrivalPair(t, w)
		parked := parkedSignal(c)
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		res := make(chan error, 1)
		go func() {
			_, err := c.Read(buf)
			res <- err
		}()
		<-parked
		c.SetReadDeadline(time.Now().Add(time.Hour))
		// The first timer may still fire: the reader wakes, finds the deadline
		// later and parks again. Either way it gets the data.
		client.Write([]byte("x"))
		if err := <-res; err != nil {
			t.Fatalf("Read with the deadline moved later: %v", err)
		}
	})
	t.Run("cleared", func(t *testing.T) {
		client, c := arrivalPair(t, w)
		parked := parkedSignal(c)
		c.SetDeadline(time.Now().Add(-time.Second))
		c.SetDeadline(time.Time{})
		res := make(chan error, 1)
		go func() {
			_, err := c.Read(buf)
			res <- err
		}()
		<-parked
		client.Write([]byte("x"))
		if err := <-res; err != nil {
			t.Fatalf("Read with the deadline cleared: %v", err)
		}
	})
}

func TestArrivalConnClose(t *testing.T) {
	w := newTestWaker(t)
	_, c := arrivalPair(t, w)
	parked := parkedSignal(c)
	res := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		res <- err
	}()
	<-parked
	slot := c.slot
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("parked Read after Close: %v, want net.ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.SetReadDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("SetReadDeadline after Close: %v, want net.ErrClosed", err)
	}
	// The slot is free again, under a new generation: an event queued for
	// the closed connection reaches nobody.
	w.mu.Lock()
	gen := w.gens[slot]
	w.mu.Unlock()
	_, c2 := arrivalPair(t, w)
	if c2.slot != slot {
		t.Fatalf("new connection in slot %d, want the freed %d", c2.slot, slot)
	}
	w.mu.Lock()
	if w.gens[slot] == gen {
		t.Fatal("slot reused under the same generation")
	}
	w.mu.Unlock()
}

// TestArrivalWakerStop: connections still open when the waker stops go on
// reading through the runtime's poller, with their deadline.
func TestArrivalWakerStop(t *testing.T) {
	w := newArrivalWaker(ReadOrderArrival)
	client, c := arrivalPair(t, w)
	parked := parkedSignal(c)
	buf := make([]byte, 8)
	res := make(chan error, 1)
	go func() {
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) != "x" {
			err = errors.New("read " + string(buf[:n]))
		}
		res <- err
	}()
	<-parked
	w.close()
	client.Write([]byte("x"))
	if err := <-res; err != nil {
		t.Fatalf("Read across the waker's stop: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline after the stop: %v", err)
	}
	// New connections are no longer registered.
	if got := w.wrap(client); got != client {
		t.Fatalf("wrap after the stop returned %T", got)
	}
}

// TestArrivalOrder is the point of the waker: on one P, connections whose
// requests arrive one after another are served in that order (the
// runtime's own poller serves each batch newest first).
func TestArrivalOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 24
	for _, order := range []string{ReadOrderArrival, ReadOrderRuntime} {
		t.Run(order, func(t *testing.T) {
			w := newTestWaker(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			clients := make([]net.Conn, n)
			servers := make([]net.Conn, n)
			for i := range n {
				if clients[i], err = net.Dial("tcp", ln.Addr().String()); err != nil {
					t.Fatal(err)
				}
				defer clients[i].Close()
				sc, err := ln.Accept()
				if err != nil {
					t.Fatal(err)
				}
				if order == ReadOrderArrival {
					sc = w.wrap(sc)
				}
				servers[i] = sc
				defer sc.Close()
			}
			var (
				mu  sync.Mutex
				got []int
				wg  sync.WaitGroup
			)
			parked := make(chan struct{}, n)
			record := func(i int) {
				mu.Lock()
				got = append(got, i)
				mu.Unlock()
			}
			for i, sc := range servers {
				ac, _ := sc.(*arrivalConn)
				if ac != nil {
					// Recorded as it runs, before its read's system call (a
					// long one could hand the P to another reader).
					ac.parked = func() { parked <- struct{}{} }
					ac.woke = func() { record(i); ac.woke = nil }
				}
				wg.Go(func() {
					if ac == nil {
						parked <- struct{}{}
					}
					var b [1]byte
					if _, err := sc.Read(b[:]); err != nil {
						t.Error(err)
					}
					if ac == nil {
						record(i)
					}
				})
			}
			for range n {
				<-parked
			}
			runtime.Gosched() // the runtime-order readers park in the poller
			for _, c := range clients {
				if _, err := c.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			inOrder := 0
			for i, v := range got {
				if v == i {
					inOrder++
				}
			}
			t.Logf("%s order: served %v", order, got)
			// Under the race detector the scheduler shuffles on purpose.
			if order == ReadOrderArrival && inOrder != n && !raceEnabled {
				t.Fatalf("served %v, want 0..%d in order", got, n-1)
			}
		})
	}
}

func TestCheckReadOrder(t *testing.T) {
	for _, s := range []string{"", ReadOrderArrival, ReadOrderRuntime} {
		if err := checkReadOrder(s); err != nil {
			t.Errorf("checkReadOrder(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"fifo", "Arrival", "lifo", " "} {
		if err := checkReadOrder(s); err == nil {
			t.Errorf("checkReadOrder(%q) accepted", s)
		}
	}
}

// BenchmarkReadOrder is the cost of the waker on a server's read path: 64
// connections over loopback, each sending a 64-byte request and reading a
// 64-byte answer in turn, the server reading each request through the
// runtime's poller or the waker. Client and server share one P, as the
// edge's bench core does; the difference between the two is the waker's
// cost per request.
//
//	go test -run '^$' -bench ReadOrder -cpu 1 ./edge/
func BenchmarkReadOrder(b *testing.B) {
	const conns = 64
	for _, order := range []string{ReadOrderRuntime, ReadOrderArrival} {
		b.Run(order, func(b *testing.B) {
			w := newArrivalWaker(ReadOrderArrival)
			defer w.close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			var servers sync.WaitGroup
			clients := make([]net.Conn, conns)
			for i := range clients {
				if clients[i], err = net.Dial("tcp", ln.Addr().String()); err != nil {
					b.Fatal(err)
				}
				sc, err := ln.Accept()
				if err != nil {
					b.Fatal(err)
				}
				if order == ReadOrderArrival {
					sc = w.wrap(sc)
				}
				servers.Go(func() {
					defer sc.Close()
					var buf [64]byte
					for {
						if _, err := io.ReadFull(sc, buf[:]); err != nil {
							return
						}
						if _, err := sc.Write(buf[:]); err != nil {
							return
						}
					}
				})
			}
			per := b.N/conns + 1
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Go(func() {
					var buf [64]byte
					for range per {
						if _, err := c.Write(buf[:]); err != nil {
							b.Error(err)
							return
						}
						if _, err := io.ReadFull(c, buf[:]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			for _, c := range clients {
				c.Close()
			}
			servers.Wait()
		})
	}
}
