package freeport

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

func TestParseRangeLow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		err  error
		want int
	}{
		{"32768\t60999\n", nil, 32768},
		{"49152 65535", nil, 49152},
		{"1024\t65535", nil, 1024},
		{"", errors.New("no /proc"), 32768},
		{"32768", nil, 32768},
		{"x 60999", nil, 32768},
		{"0 60999", nil, 32768},
		{"70000 80000", nil, 32768},
	} {
		if got := parseRangeLow(tc.in, tc.err); got != tc.want {
			t.Errorf("parseRangeLow(%q, %v) = %d, want %d", tc.in, tc.err, got, tc.want)
		}
	}
}

func TestPort(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if hi := ephemeralLow(); hi-lowest >= 1000 && (p < lowest || p >= hi) {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, hi)
		}
		// It can be bound, for TCP and for UDP.
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// While held, it is not free.
		if free(p) {
			t.Errorf("port %d reported free while bound", p)
		}
		l.Close()
		u.Close()
		seen[p] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave %d ports: not random", len(seen))
	}
}

func TestFreeUDPTaken(t *testing.T) {
	p, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if free(p) {
		t.Errorf("port %d reported free while its UDP twin is bound", p)
	}
}

func TestAddr(t *testing.T) {
	a, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(a)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, %v", a, err)
	}
}
