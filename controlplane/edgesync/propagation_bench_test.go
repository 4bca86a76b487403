package edgesync_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// benchEdges is how many simulated edges long-poll during the benchmark.
const benchEdges = 100

// idleWindow is how long the control plane's CPU is measured while every
// edge waits in a long-poll and nothing changes.
const idleWindow = 3 * time.Second

const benchOwnerKey = "bench-owner-key-0123456789abcdef"

// benchReplica is one in-process control plane serving the API (and the
// edge protocol) on a real socket.
type benchReplica struct {
	cp  *controlplane.ControlPlane
	srv *httptest.Server
}

func startReplica(b *testing.B, store, dataDir, sealKey, blobs string) *benchReplica {
	b.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cp, err := controlplane.New(context.Background(), controlplane.Config{
		APIBaseURL: "http://" + srv.Listener.Addr().String(),
		DataDir:    dataDir, AppsDomain: "apps.test", Store: store, SealKeyFile: sealKey, Blobs: blobs,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Bootstrap: accounts.BootstrapConfig{WorkspaceName: "Bench", OwnerEmail: "owner@example.com", Plan: plans.Pro, Key: benchOwnerKey},
	})
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	srv.Config.Handler = cp.Handler()
	srv.Start()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- cp.Run(ctx) }()
	b.Cleanup(func() {
		srv.Close()
		stop()
		if err := <-ran; err != nil {
			b.Error(err)
		}
		cp.Close()
	})
	return &benchReplica{cp: cp, srv: srv}
}

// received is one snapshot an edge holds.
type received struct {
	edge    int
	version int64
	at      time.Time
}

// simEdge long-polls like platform edge: GET /edge/v1/config?after=V with
// gzip, decodes the snapshot, and reports each version it holds.
func simEdge(ctx context.Context, hc *http.Client, base, token string, idx int, out chan<- received) {
	var after int64
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+snapshot.ConfigPath+"?after="+strconv.FormatInt(after, 10)+"&wait=60", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				panic(fmt.Sprintf("edge %d: %v", idx, err))
			}
			return
		}
		if resp.StatusCode == http.StatusNotModified {
			resp.Body.Close()
			continue
		}
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				panic(err)
			}
			body = zr
		}
		var s snapshot.Snapshot
		err = json.NewDecoder(body).Decode(&s)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			if ctx.Err() != nil {
				return
			}
			panic(fmt.Sprintf("edge %d: %d %v", idx, resp.StatusCode, err))
		}
		after = s.Version
		select {
		case out <- received{idx, s.Version, time.Now()}:
		case <-ctx.Done():
			return
		}
	}
}

// cpuTime is the process's user+system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runPropagation drives the edges: each iteration saves Shield through
// saveVia and waits until all edges hold a version newer than the one they
// all held before; then it measures CPU over an idle window.
func runPropagation(b *testing.B, saveVia *benchReplica, edgesOn []*benchReplica) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchEdges, MaxConnsPerHost: 0}}
	defer hc.CloseIdleConnections()
	out := make(chan received, 4*benchEdges)
	var wg sync.WaitGroup
	for i := range benchEdges {
		r := edgesOn[i%len(edgesOn)]
		tok, _, err := r.cp.EdgeSync().MintToken(ctx, fmt.Sprintf("sim-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { simEdge(ctx, hc, r.srv.URL, tok, i, out) })
	}
	held := make([]int64, benchEdges)
	// waitAll reads reports until every edge holds a version above floor
	// and returns the latest arrival.
	waitAll := func(floor int64, what string) time.Time {
		var last time.Time
		pending := 0
		for _, v := range held {
			if v <= floor {
				pending++
			}
		}
		deadline := time.After(30 * time.Second)
		for pending > 0 {
			select {
			case r := <-out:
				if held[r.edge] <= floor && r.version > floor {
					pending--
					last = r.at
				}
				held[r.edge] = max(held[r.edge], r.version)
			case <-deadline:
				b.Fatalf("%s: %d edges of %d never got past version %d", what, pending, benchEdges, floor)
			}
		}
		return last
	}
	waitAll(0, "first snapshot")

	put := func(i int) {
		body := fmt.Sprintf(`{"denyIps":["203.0.113.%d"]}`, i%250+1)
		req, _ := http.NewRequest("PUT", saveVia.srv.URL+"/api/services/shield", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+benchOwnerKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("shield save: %d %s", resp.StatusCode, rb)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	saves := make([]time.Duration, 0, b.N) // the PUT alone, answered
	b.ResetTimer()
	for i := range b.N {
		floor := slices.Min(held)
		start := time.Now()
		put(i)
		saves = append(saves, time.Since(start))
		lat = append(lat, waitAll(floor, "save "+strconv.Itoa(i)).Sub(start))
	}
	b.StopTimer()

	// Idle: every edge waits in a long-poll (wait=60 s) and nothing
	// changes. Sleeping is the measurement window here, not a wait for
	// something to happen.
	c0, w0 := cpuTime(), time.Now()
	time.Sleep(idleWindow)
	idle := cpuTime() - c0
	wall := time.Since(w0)
	select {
	case r := <-out:
		b.Fatalf("edge %d got version %d while nothing changed", r.edge, r.version)
	default:
	}
	cancel()
	hc.CloseIdleConnections()

	slices.Sort(lat)
	slices.Sort(saves)
	// pct is the nearest-rank percentile of sorted ds, in milliseconds.
	pct := func(ds []time.Duration, p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return float64(ds[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(pct(lat, 1), "max-ms")
	b.ReportMetric(pct(saves, 0.50), "save-p50-ms")
	b.ReportMetric(float64(idle.Microseconds())/1000/wall.Seconds(), "idle-cpu-ms/s")
}

// BenchmarkPropagation measures the time from a Shield save (PUT
// /api/services/shield, answered) to all 100 simulated edges holding the
// new snapshot, p50 and p99 over b.N saves (run with -benchtime=50x), and
// the process's CPU per second while the edges wait idle. The edges run
// in the benchmark's process too; while idle they are blocked in reads.
//
//	go test -run '^$' -bench Propagation -benchtime 50x ./controlplane/edgesync/
func BenchmarkPropagation(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		r := startReplica(b, "", b.TempDir(), "", "")
		runPropagation(b, r, []*benchReplica{r})
	})
	b.Run("postgres-2-replicas", func(b *testing.B) {
		// Two control planes on one PostgreSQL, 50 edges on each; the
		// saves go through the first: half the edges learn of them by
		// LISTEN/NOTIFY on the other replica.
		dsn := pgtest.MigratedDSN(b)
		dir := b.TempDir()
		key := make([]byte, 32)
		rand.Read(key)
		sealKey := filepath.Join(dir, "seal.key")
		if err := os.WriteFile(sealKey, key, 0o600); err != nil {
			b.Fatal(err)
		}
		blobs := filepath.Join(dir, "blobs")
		a := startReplica(b, dsn, filepath.Join(dir, "a"), sealKey, blobs)
		r2 := startReplica(b, dsn, filepath.Join(dir, "b"), sealKey, blobs)
		runPropagation(b, a, []*benchReplica{a, r2})
	})
}
