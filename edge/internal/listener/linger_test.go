package listener

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// closeSignal is the accepted side of a TCP connection that reports its
// close.
type closeSignal struct {
	*net.TCPConn
	closed chan struct{}
}

func (c *closeSignal) Close() error {
	err := c.TCPConn.Close()
	if err == nil {
		close(c.closed)
	}
	return err
}

// lingerPair returns the two ends of a loopback TCP connection, the
// accepted one wrapped as the edge wraps it, and a channel closed when
// that one's socket is closed.
func lingerPair(t *testing.T) (client net.Conn, server *DeadlineConn, closed chan struct{}) {
	s, client := tcpPair(t)
	cs := &closeSignal{TCPConn: s.(*net.TCPConn), closed: make(chan struct{})}
	return client, NewDeadlineConn(cs), cs.closed
}

func TestLingeringClose(t *testing.T) {
	t.Run("the answer, then the end, while the client's input is dropped", func(t *testing.T) {
		client, server, closed := lingerPair(t)
		LingerOnClose(server)
		server.Write([]byte("431 answer"))
		if err := server.Close(); err != nil {
			t.Fatal(err)
		}
		// The client is still writing: far more than the socket buffers
		// hold, so it only completes when the edge reads it.
		wrote := make(chan error, 1)
		go func() { _, err := client.Write(bytes.Repeat([]byte("x"), 16<<20)); wrote <- err }()
		got, err := io.ReadAll(client)
		if string(got) != "431 answer" || err != nil {
			t.Fatalf("client read %q %v", got, err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("client write: %v (reset instead of drained)", err)
		}
		select {
		case <-closed:
			t.Fatal("closed while the client is still connected")
		default:
		}
		client.Close()
		<-closed
	})
	t.Run("a quiet client is closed after the quiet time", func(t *testing.T) {
		client, server, closed := lingerPair(t)
		lingering.Add(1)
		server.Conn.(*closeSignal).CloseWrite()
		go server.drain(10*time.Millisecond, time.Now().Add(time.Hour))
		<-closed // never, without the quiet bound
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := client.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("client read: %v", err)
		}
	})
	t.Run("a client that keeps writing is closed at the total bound", func(t *testing.T) {
		client, server, closed := lingerPair(t)
		lingering.Add(1)
		server.Conn.(*closeSignal).CloseWrite()
		go server.drain(time.Hour, time.Now().Add(20*time.Millisecond))
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					if _, err := client.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		<-closed // never, without the total bound
		close(stop)
	})
	t.Run("past maxLingering, closed at once", func(t *testing.T) {
		client, server, closed := lingerPair(t)
		lingering.Add(maxLingering)
		defer lingering.Add(-maxLingering)
		LingerOnClose(server)
		server.Close()
		<-closed
		client.Close()
	})
	t.Run("not marked: closed at once", func(t *testing.T) {
		_, server, closed := lingerPair(t)
		server.Close()
		<-closed
	})
	for lingering.Load() != 0 {
		runtime.Gosched()
	}
}
