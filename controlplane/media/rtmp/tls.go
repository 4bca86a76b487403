package rtmp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// TLS proxy limits (ours).
const (
	// DefaultMaxTLSConns bounds RTMPS connections held at once; more wait
	// in the kernel's accept queue.
	DefaultMaxTLSConns = 256
	// TLSHandshakeTimeout bounds a client's TLS handshake.
	TLSHandshakeTimeout = 10 * time.Second
)

// ErrNoCertificate means an RTMPS listener was configured without one.
var ErrNoCertificate = errors.New("rtmp: rtmps needs a certificate")

// TLSProxy terminates RTMPS: it accepts TLS connections with the
// platform's certificate and forwards the plain RTMP bytes to the local
// RTMP server, so nginx (and its on_publish key check) sees every
// publisher exactly as if it had connected over rtmp://.
type TLSProxy struct {
	ln      net.Listener
	backend string
	log     *slog.Logger
	slots   chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// ListenTLS listens on addr with cfg (which must hold a certificate or a
// GetCertificate) and forwards each connection to backend, the RTMP
// server's address.
func ListenTLS(addr string, cfg *tls.Config, backend string, log *slog.Logger) (*TLSProxy, error) {
	if cfg == nil || (len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil) {
		return nil, ErrNoCertificate
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rtmp: rtmps listen: %w", err)
	}
	return ServeTLS(ln, cfg, backend, log), nil
}

// ServeTLS runs the proxy on an open listener (which it takes over).
func ServeTLS(ln net.Listener, cfg *tls.Config, backend string, log *slog.Logger) *TLSProxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.Clone()
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	p := &TLSProxy{ln: tls.NewListener(ln, cfg), backend: backend, log: log,
		slots: make(chan struct{}, DefaultMaxTLSConns), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p
}

// Addr is the address the proxy listens on.
func (p *TLSProxy) Addr() net.Addr { return p.ln.Addr() }

func (p *TLSProxy) serve() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		p.slots <- struct{}{}
		c, err := p.ln.Accept()
		if err != nil {
			<-p.slots
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary (e.g. out of descriptors): back off and go on.
			p.log.Warn("rtmp: rtmps accept", "err", err)
			time.Sleep(backoff)
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !p.track(c, true) {
			c.Close()
			<-p.slots
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			defer p.track(c, false)
			p.handle(c.(*tls.Conn))
		}()
	}
}

// track adds or removes an open connection; false once closed.
func (p *TLSProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// handle finishes the handshake and copies bytes both ways until either
// side ends; then both are closed.
func (p *TLSProxy) handle(c *tls.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), TLSHandshakeTimeout)
	err := c.HandshakeContext(ctx)
	cancel()
	if err != nil {
		p.log.Info("rtmp: rtmps handshake", "addr", c.RemoteAddr(), "err", err)
		return
	}
	b, err := net.DialTimeout("tcp", p.backend, 5*time.Second)
	if err != nil {
		p.log.Error("rtmp: rtmps backend", "backend", p.backend, "err", err)
		return
	}
	if !p.track(b, true) {
		b.Close()
		return
	}
	defer p.track(b, false)
	defer b.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		// Either direction ending ends the session: RTMP has no half-close.
		c.Close()
		b.Close()
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	<-done
}

// Close stops listening, cuts every connection and waits for them.
func (p *TLSProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
