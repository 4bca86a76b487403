package provider_test

import (
	"io"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/ai/provider"
)

// chunked hands out its parts one Read at a time, as a network does.
type chunked struct{ parts []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// Ready tells whether the next event is already buffered: only a whole
// event counts, so a relay never waits on the network with a piece unsent.
func TestSSEReaderReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		// ready is Ready after the first event was read.
		ready bool
	}{
		{"two events in one read", []string{"data: a\n\ndata: b\n\n"}, true},
		{"two events, CRLF", []string{"data: a\r\n\r\ndata: b\r\n\r\n"}, true},
		{"second event half arrived", []string{"data: a\n\ndata: b\n"}, false},
		{"second event in the next read", []string{"data: a\n\n", "data: b\n\n"}, false},
		{"nothing after", []string{"data: a\n\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := provider.NewSSEReader(&chunked{parts: append([]string(nil), tc.parts...)})
			if r.Ready() {
				t.Fatal("ready before any read")
			}
			if _, data, err := r.Next(); err != nil || string(data) != "a" {
				t.Fatalf("first event %q %v", data, err)
			}
			if got := r.Ready(); got != tc.ready {
				t.Fatalf("Ready() = %v, want %v", got, tc.ready)
			}
			if strings.Contains(strings.Join(tc.parts, ""), "data: b\n\n") || strings.Contains(strings.Join(tc.parts, ""), "data: b\r\n\r\n") {
				if _, data, err := r.Next(); err != nil || string(data) != "b" {
					t.Fatalf("second event %q %v", data, err)
				}
			}
		})
	}
}
