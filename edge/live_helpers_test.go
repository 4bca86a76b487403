package edge

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// liveEdge is an edge serving on real sockets on 127.0.0.1 with a
// configuration applied in memory: no control plane (its sync fails
// quietly against a closed port and keeps the configuration).
type liveEdge struct {
	*Edge
	t      testing.TB
	https  string
	client *http.Client // HTTP/1.1 over TLS, every host dialled at the edge
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// appSnapshot is a configuration of app sites host -> origin base URL.
func appSnapshot(sites map[string]string) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Version: 1, AppsDomain: "apps.test", SessionKey: make([]byte, 32),
		Workspaces: []snapshot.Workspace{{ID: "ws_1"}}}
	for host, origin := range sites {
		s.Sites = append(s.Sites, snapshot.Site{Host: host, Slug: host, ProjectID: "prj_" + host, WorkspaceID: "ws_1",
			Deployment: snapshot.Deployment{ID: "dpl_" + host, Kind: snapshot.KindApp, Origin: origin}})
	}
	return s
}

// newLiveEdge starts an edge with snap applied. Options change the config
// (AllowPrivateNetworks is on unless an option turns it off).
func newLiveEdge(t testing.TB, snap *snapshot.Snapshot, opts ...func(*Config)) *liveEdge {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{
		HTTPAddr: "-", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: dir,
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		TrustedProxies: []string{"127.0.0.1/32"}, AllowPrivateNetworks: true, SyncWait: time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Listen(); err != nil {
		e.Close()
		t.Fatal(err)
	}
	if snap != nil {
		if err := e.apply(context.Background(), snap, nil); err != nil {
			e.Close()
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	le := &liveEdge{Edge: e, t: t, https: e.HTTPSAddr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { le.done <- e.Run(ctx) }()
	le.client = &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.CA().Pool()}, DisableCompression: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, le.https)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	t.Cleanup(le.stop)
	le.waitServing()
	return le
}

// waitServing waits until the HTTPS listener answers a TLS handshake.
func (le *liveEdge) waitServing() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tls.Dial("tcp", le.https, &tls.Config{RootCAs: le.CA().Pool(), ServerName: "x.apps.test"})
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			le.t.Fatalf("edge not serving: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the edge gracefully and waits for Run to return (once).
func (le *liveEdge) stop() {
	le.once.Do(func() {
		le.client.CloseIdleConnections()
		le.cancel()
		select {
		case err := <-le.done:
			if err != nil {
				le.t.Errorf("edge run: %v", err)
			}
		case <-time.After(20 * time.Second):
			le.t.Error("edge did not stop")
		}
	})
}

// h2Client returns an HTTP/2 client (ALPN h2) dialling the edge.
func (le *liveEdge) h2Client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: le.CA().Pool()}, DisableCompression: true,
			ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, le.https)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
}
