package forward

import (
	"net"
	"testing"
	"time"
)

// deadlineConn records the read deadlines set on it; every Read returns one
// byte.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *deadlineConn) Read(p []byte) (int, error)        { p[0] = 'x'; return 1, nil }

// TestOriginConnReadDeadlines: the first-byte deadline is set exactly, once
// per response; idle deadlines are moved only when they lag by rearmSlack,
// and never left in the past.
func TestOriginConnReadDeadlines(t *testing.T) {
	const idle = time.Minute
	tests := []struct {
		name string
		run  func(t *testing.T, oc *Conn, dc *deadlineConn)
	}{
		{"first byte deadline exact, then idle once", func(t *testing.T, oc *Conn, dc *deadlineConn) {
			first := time.Now().Add(10 * time.Second)
			oc.SetReadDeadline(first)
			var b [1]byte
			oc.Read(b[:]) // first byte: the first-byte deadline
			for range 100 {
				oc.Read(b[:]) // idle phase: one deadline, then within slack
			}
			if len(dc.set) != 2 || !dc.set[0].Equal(first) {
				t.Fatalf("deadlines %v, want [%v, now+idle]", dc.set, first)
			}
			if d := time.Until(dc.set[1]); d < idle-rearmSlack(idle) || d > idle {
				t.Fatalf("idle deadline in %v, want about %v", d, idle)
			}
		}},
		{"each response gets its own first-byte deadline", func(t *testing.T, oc *Conn, dc *deadlineConn) {
			var b [1]byte
			for i := range 3 {
				first := time.Now().Add(time.Duration(i+1) * time.Second)
				oc.SetReadDeadline(first)
				oc.Read(b[:])
				if got := dc.set[len(dc.set)-1]; !got.Equal(first) {
					t.Fatalf("response %d: deadline %v, want %v", i, got, first)
				}
			}
		}},
		{"idle deadline moved once it lags by the slack", func(t *testing.T, oc *Conn, dc *deadlineConn) {
			var b [1]byte
			oc.Read(b[:])
			oc.rd = oc.rd.Add(-rearmSlack(idle)) // as if rearmSlack had passed since
			oc.Read(b[:])
			if len(dc.set) != 2 {
				t.Fatalf("%d deadlines set, want 2", len(dc.set))
			}
		}},
		{"a deadline in the past is replaced", func(t *testing.T, oc *Conn, dc *deadlineConn) {
			var b [1]byte
			oc.rd = time.Now().Add(-time.Second)
			oc.Read(b[:])
			if len(dc.set) != 1 || !dc.set[0].After(time.Now()) {
				t.Fatalf("deadlines %v, want one in the future", dc.set)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &deadlineConn{}
			oc := &Conn{Conn: dc, idle: idle}
			tt.run(t, oc, dc)
		})
	}
}
