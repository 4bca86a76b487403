package placement_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// BenchmarkForward compares a small request served by the owner itself
// (direct) with the same request sent to another replica that forwards it
// (forwarded): the cost of the extra hop, client, both servers and the
// proxy together, on loopback.
func BenchmarkForward(b *testing.B) {
	dsn := pgtest.SQLitePath(b)
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	owner := startNode(b, dsn, "node-a", clock.NewFake(start))
	other := startNode(b, dsn, "node-b", clock.NewFake(start))
	assign(b, owner.db, owner.reg, "db_a")
	body := bytes.Repeat([]byte("x"), 256)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for _, tc := range []struct {
		name string
		n    *node
	}{{"direct", owner}, {"forwarded", other}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(tc.n.srv.URL+"/r/db_a", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusTeapot {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
