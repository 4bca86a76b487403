package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/geodata"
	"github.com/svcplatform/platform/rules"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixedLocator places every address in one country.
type fixedLocator geodata.Country

func (l fixedLocator) Country(netip.Addr) geodata.Country { return geodata.Country(l) }

// unitEdge is an Edge with a configuration applied in memory and blobs in a
// temporary directory: no listener, no control plane.
type unitEdge struct {
	*Edge
	blobDir string
}

// putBlob writes data into dir's content-addressed layout and returns its
// snapshot file entry.
func putBlob(t testing.TB, dir, path, contentType string, data []byte) snapshot.File {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	p := filepath.Join(dir, name[:2], name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return snapshot.File{Path: path, SHA256: name, Size: int64(len(data)), ContentType: contentType}
}

// newUnitEdge returns an edge serving one static site, blog.apps.test,
// with the given files and Shield settings.
func newUnitEdge(t testing.TB, shield rules.Settings, files map[string][]byte, opts ...func(*Config)) *unitEdge {
	t.Helper()
	dir := t.TempDir()
	blobDir := filepath.Join(dir, "blobs")
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: dir, BlobDir: blobDir,
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		TrustedProxies: []string{"10.0.0.0/8"},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	var fs []snapshot.File
	for p, data := range files {
		ct := "text/html; charset=utf-8"
		if filepath.Ext(p) == ".css" {
			ct = "text/css; charset=utf-8"
		}
		fs = append(fs, putBlob(t, blobDir, p, ct, data))
	}
	snap := &snapshot.Snapshot{
		Version: 1, AppsDomain: "apps.test", SessionKey: make([]byte, 32),
		Sites: []snapshot.Site{{Host: "blog.apps.test", Slug: "blog", ProjectID: "prj_blog", WorkspaceID: "ws_1",
			Deployment: snapshot.Deployment{ID: "dpl_1", Kind: snapshot.KindStatic, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
				CDN: snapshot.CDN{Enabled: true, CacheTTLSeconds: 3600}, Files: fs}}},
		Workspaces: []snapshot.Workspace{{ID: "ws_1", Shield: shield}},
	}
	if err := e.apply(context.Background(), snap, nil); err != nil {
		t.Fatal(err)
	}
	return &unitEdge{Edge: e, blobDir: blobDir}
}

// request prepares ctx as a request from addr over HTTPS.
func request(ctx *fasthttp.RequestCtx, method, host, uri string, addr string, header map[string]string) {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	req.Header.SetHost(host)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	ap := netip.MustParseAddrPort(addr)
	ctx.Init(&req, net.TCPAddrFromAddrPort(ap), nil)
}

// shieldOn is a workspace configuration that makes Evaluate walk every
// rule for an address that passes.
func shieldOn() rules.Settings {
	s := rules.DefaultSettings()
	s.BlockedCountries = []string{"CN", "RU", "KP"}
	s.DenyIPs = []string{"198.51.100.0/24", "2001:db8:dead::/48"}
	s.AllowIPs = []string{"192.0.2.10"}
	s.BlockAICrawlers = true
	return s
}
