package media

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/edge"
)

// edgeMediaHost is the playback host the browser tests play from.
const edgeMediaHost = "media.apps.test"

// playbackEdge is a real edge (package edge, on 127.0.0.1) whose only
// configuration is the playback host, pulled over the edge protocol from a
// minimal configuration endpoint that names this test's control plane as
// the playback origin.
type playbackEdge struct {
	edge *edge.Edge
	// base is the playback base URL (https://media.apps.test:<port>).
	base string

	mu     sync.Mutex
	origin string
}

// newPlaybackEdge listens (so the playback base URL is known before the
// control plane is configured with it); start runs it.
func newPlaybackEdge(t *testing.T) *playbackEdge {
	t.Helper()
	pe := &playbackEdge{}
	cp := httptest.NewServer(http.HandlerFunc(pe.config))
	t.Cleanup(cp.Close)
	ed, err := edge.New(edge.Config{HTTPAddr: "-", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: cp.URL, Token: snapshot.TokenPrefix + "test", SyncWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := ed.Listen(); err != nil {
		ed.Close()
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ed.HTTPSAddr().String())
	pe.edge, pe.base = ed, "https://"+edgeMediaHost+":"+port
	return pe
}

// start runs the edge with origin as the playback origin and waits until
// it serves.
func (pe *playbackEdge) start(t *testing.T, origin string) {
	t.Helper()
	pe.mu.Lock()
	pe.origin = origin
	pe.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pe.edge.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("edge run: %v", err)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for !pe.edge.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("edge not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// config answers the edge's long-poll: version 1 with the playback host,
// then nothing new until the wait ends.
func (pe *playbackEdge) config(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != snapshot.ConfigPath {
		http.NotFound(w, r)
		return
	}
	if after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64); after >= 1 {
		wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
		select {
		case <-r.Context().Done():
		case <-time.After(time.Duration(wait) * time.Second):
		}
		w.Header().Set(snapshot.VersionHeader, "1")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	pe.mu.Lock()
	origin := pe.origin
	pe.mu.Unlock()
	snap := snapshot.Snapshot{Version: 1, GeneratedAt: time.Now(), AppsDomain: "apps.test", SessionKey: make([]byte, 32),
		Sites: []snapshot.Site{}, Workspaces: []snapshot.Workspace{}, Media: &snapshot.Media{Host: edgeMediaHost, Origin: origin}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(snapshot.VersionHeader, "1")
	json.NewEncoder(w).Encode(snap)
}
