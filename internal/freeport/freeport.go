// Package freeport picks loopback ports for servers that bind them a
// moment later, usually in another process (a `platform serve` under test,
// PostgreSQL, an S3 server, an app the runtime starts).
//
// The usual way, listening on port 0 and closing, hands out a port from
// the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999
// by default), the very range every outgoing connection and every other
// port-0 listener on the machine draws from: with the test packages
// running in parallel, one of them took such a port before the server
// bound it ("bind: address already in use", a failed CI run). So the port
// is drawn at random from below that range, where the kernel never hands
// out ports on its own, and checked free for TCP and UDP (HTTP/3 listens
// on the HTTPS port's UDP twin). Only another picker of the same kind can
// still take it, with odds of about one in 12,000 per pair of picks at
// the same moment.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lowest is the first port drawn from; below it lie the ports of common
// services run by hand (databases, caches, development servers).
const lowest = 20000

// tries is how many random ports are tried before falling back to port 0.
const tries = 64

var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	return parseRangeLow(string(b), err)
})

// parseRangeLow reads the first port of ip_local_port_range ("32768\t60999"),
// 32768 (the kernel's default) when it cannot.
func parseRangeLow(s string, err error) int {
	if f := strings.Fields(s); err == nil && len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil && n > 0 && n <= 65535 {
			return n
		}
	}
	return 32768
}

// Port returns a loopback port that is free for TCP and UDP now.
func Port() (int, error) {
	if hi := ephemeralLow(); hi-lowest >= 1000 {
		for range tries {
			if p := lowest + rand.IntN(hi-lowest); free(p) {
				return p, nil
			}
		}
	}
	// The range leaves no room below it, or every try was taken: the
	// kernel's pick, as before.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr returns "127.0.0.1:port" for a Port.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// free reports whether port p can be bound on 127.0.0.1 for TCP and UDP.
func free(p int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// WaitAccept waits until every one of addrs accepts a TCP connection (a
// server started as a child process opens its listeners after it says it
// runs), dialling again every 20 ms, and fails after within.
func WaitAccept(within time.Duration, addrs ...string) error {
	deadline := time.Now().Add(within)
	for _, a := range addrs {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not accept: %w", a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}
