package forward

import (
	"testing"
	"time"
)

func TestKeepWriteDeadline(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	const timeout = 60 * time.Second
	for _, tc := range []struct {
		name   string
		cur, t time.Time
		want   bool
	}{
		{"none set yet", time.Time{}, now.Add(timeout), false},
		{"slightly behind the one asked", now.Add(timeout - time.Second), now.Add(timeout), true},
		{"a sixteenth behind", now.Add(timeout - timeout/16), now.Add(timeout), true},
		{"more than a sixteenth behind", now.Add(timeout - timeout/16 - time.Millisecond), now.Add(timeout), false},
		{"past the one asked (a shorter timeout)", now.Add(timeout + time.Second), now.Add(timeout), false},
		{"already passed", now.Add(-time.Millisecond), now.Add(time.Millisecond), false},
		{"clearing", now.Add(timeout), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keepWriteDeadline(tc.cur, tc.t, now); got != tc.want {
				t.Fatalf("keepWriteDeadline = %v, want %v", got, tc.want)
			}
		})
	}
}
