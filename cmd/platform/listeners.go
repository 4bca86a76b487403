package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// A start binds every address it will listen on before it creates
// anything (the data directory's database, keys, CA, the first workspace),
// so a port in use fails the start with nothing made.

// Listener groups, released to the component that binds them itself.
const (
	// groupEdge is the edge's HTTP and HTTPS addresses (TCP, and UDP for
	// HTTP/3), bound by edge.Listen.
	groupEdge = "edge"
	// groupLive is live ingest: RTMP (bound by nginx) and RTMPS (by the
	// platform's TLS proxy), both started when the control plane runs.
	groupLive = "live"
	// groupMail is the SMTP listener taking bounces and complaints
	// (--mail-bounce-addr), bound when the control plane runs.
	groupMail = "mail"
)

// listenerFlag is one address a command listens on and the flag that sets it.
type listenerFlag struct {
	what, flag, env, addr string
	// udp: the port is also bound over UDP (HTTP/3 on the HTTPS port).
	udp bool
	// group is empty for the API and admin listeners, which the process
	// serves on itself and keeps; else the group it is released with.
	group string
}

// listenersOf lists the addresses cmd listens on with o; addresses that are
// off (empty, or "-" for the edge's plain HTTP) are left out.
func listenersOf(cmd string, o options) []listenerFlag {
	var out []listenerFlag
	if cmd != "edge" {
		out = append(out, listenerFlag{what: "api", flag: "api-addr", env: "PLATFORM_API_ADDR", addr: o.apiAddr})
	}
	out = append(out, listenerFlag{what: "admin", flag: "admin-addr", env: "PLATFORM_ADMIN_ADDR", addr: o.adminAddr})
	if cmd != "controlplane" {
		if o.httpAddr != "-" {
			out = append(out, listenerFlag{what: "http", flag: "http-addr", env: "PLATFORM_HTTP_ADDR", addr: o.httpAddr, group: groupEdge})
		}
		out = append(out, listenerFlag{what: "https", flag: "https-addr", env: "PLATFORM_HTTPS_ADDR", addr: o.httpsAddr, udp: true, group: groupEdge})
	}
	if cmd != "edge" && o.rtmpAddr != "" {
		out = append(out, listenerFlag{what: "rtmp", flag: "rtmp-addr", env: "PLATFORM_RTMP_ADDR", addr: o.rtmpAddr, group: groupLive})
		if o.rtmpsAddr != "" && o.acmeEmail == "" {
			out = append(out, listenerFlag{what: "rtmps", flag: "rtmps-addr", env: "PLATFORM_RTMPS_ADDR", addr: o.rtmpsAddr, group: groupLive})
		}
	}
	if cmd != "edge" && o.mailBounceAddr != "" {
		out = append(out, listenerFlag{what: "mail bounces", flag: "mail-bounce-addr", env: "PLATFORM_MAIL_BOUNCE_ADDR", addr: o.mailBounceAddr, group: groupMail})
	}
	return out
}

// reservation holds what reserve bound: the API and admin listeners, served
// on, and the sockets of the other groups until they are released.
type reservation struct {
	api, admin net.Listener
	held       map[string][]io.Closer
	// skipped are the optional listeners left off because their default
	// address was in use, each with why.
	skipped []skippedListener
}

// errOffWithRTMP is why RTMPS is left off when RTMP is.
var errOffWithRTMP = errors.New("off with RTMP")

// skippedListener is an optional listener (live ingest) that reserve left
// off: its address was its default, not one the operator chose, and busy.
type skippedListener struct {
	listenerFlag
	err error
}

// optional reports whether l may be left off when its port is busy: live
// ingest at its default address. An address the operator chose (flag or
// environment) must bind, or the start fails.
func optional(l listenerFlag, o options) bool {
	return l.group == groupLive && !o.set[l.flag]
}

// skipped reports whether reserve left the listener of flag off.
func (r *reservation) isSkipped(flag string) bool {
	for _, s := range r.skipped {
		if s.flag == flag {
			return true
		}
	}
	return false
}

// reserve binds every address of listenersOf(cmd, o). With o.reusePort the
// edge's addresses are bound with SO_REUSEPORT, as the edge binds them, so a
// process taking over from one still draining starts. A port given as 0 is
// the kernel's choice, never in use, and is left to its owner.
func reserve(cmd string, o options) (*reservation, error) {
	r := &reservation{held: map[string][]io.Closer{}}
	for _, l := range listenersOf(cmd, o) {
		var lc net.ListenConfig
		if l.group == groupEdge && o.reusePort {
			lc.Control = reusePort
		}
		_, port, err := net.SplitHostPort(l.addr)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("%s address %q: %w; set --%s to host:port", l.what, l.addr, err, l.flag)
		}
		if l.group != "" && port == "0" {
			continue
		}
		if l.what == "rtmps" && r.isSkipped("rtmp-addr") {
			// RTMPS forwards to RTMP: off with it.
			r.skipped = append(r.skipped, skippedListener{l, errOffWithRTMP})
			continue
		}
		ln, err := lc.Listen(context.Background(), "tcp", l.addr)
		if err != nil && optional(l, o) {
			r.skipped = append(r.skipped, skippedListener{l, err})
			continue
		}
		if err != nil {
			r.close()
			return nil, busy(l, "", err)
		}
		switch {
		case l.what == "api":
			r.api = ln
		case l.what == "admin":
			r.admin = ln
		default:
			r.held[l.group] = append(r.held[l.group], ln)
		}
		if l.udp {
			pc, err := lc.ListenPacket(context.Background(), "udp", l.addr)
			if err != nil {
				r.close()
				return nil, busy(l, " (UDP, for HTTP/3)", err)
			}
			r.held[l.group] = append(r.held[l.group], pc)
		}
	}
	return r, nil
}

// busy is the error of an address that cannot be bound: it names the
// address and the flag that moves it.
func busy(l listenerFlag, proto string, err error) error {
	off := ""
	if l.group == groupLive {
		off = fmt.Sprintf(", or turn it off with --%s ''", l.flag)
	}
	return fmt.Errorf("%s address %s%s: %w; free the port or choose another with --%s (env %s)%s",
		l.what, l.addr, proto, err, l.flag, l.env, off)
}

// release closes the sockets of group, just before the component that
// binds them itself does.
func (r *reservation) release(group string) {
	for _, c := range r.held[group] {
		c.Close()
	}
	delete(r.held, group)
}

// close releases everything still held, the API and admin listeners too.
func (r *reservation) close() {
	for g := range r.held {
		r.release(g)
	}
	for _, ln := range []net.Listener{r.api, r.admin} {
		if ln != nil {
			ln.Close()
		}
	}
}

// edgePaths are the API paths the in-process edge calls while it starts
// (its CA and certificates) and syncs (configuration, blobs, counts).
var edgePaths = []string{"/api/edge/", "/edge/"}

// startGate holds API requests until the first start's workspace exists,
// so a request racing a first start waits for the key it is about to be
// shown instead of getting 401; the edge's own calls pass at once (the
// in-process edge starts before the workspace is made). A request whose
// client goes away, or whose server closes, stops waiting.
type startGate struct {
	h    http.Handler
	done chan struct{}
	once sync.Once
}

func newStartGate(h http.Handler) *startGate { return &startGate{h: h, done: make(chan struct{})} }

// open lets every request through from now on.
func (g *startGate) open() { g.once.Do(func() { close(g.done) }) }

func (g *startGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.done:
	default:
		if !isEdgePath(r.URL.Path) {
			select {
			case <-g.done:
			case <-r.Context().Done():
				return
			}
		}
	}
	g.h.ServeHTTP(w, r)
}

func isEdgePath(path string) bool {
	for _, p := range edgePaths {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
