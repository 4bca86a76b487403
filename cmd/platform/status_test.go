package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/store"
)

// TestStatusCommand: platform status asks a running serve's admin
// listener and shows its parts, version, data size, job queue and the
// edges connected with the snapshot version each holds (the in-process
// one, and a remote one by its poll); with nothing running it says so,
// shows the data directory and exits 3.
func TestStatusCommand(t *testing.T) {
	o := testOptions(t, "--rtmp-addr", "", "--public-url", "https://cp.example.test")
	// A remote edge's token, minted before the start (a running control
	// plane reads new tokens within 30 s).
	db, err := store.Open(context.Background(), filepath.Join(o.data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	secret, remote, err := edgesync.MintToken(context.Background(), db, "fra-1", time.Now())
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, o)
	req, _ := http.NewRequest("GET", "http://"+o.apiAddr+snapshot.ConfigPath+"?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("remote edge poll: %v %v", resp, err)
	}
	resp.Body.Close()
	// A poll with a wrong token is never listed.
	req.Header.Set("Authorization", "Bearer svc_edge_wrong")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong token: %v %v", resp, err)
	}

	var out, errOut bytes.Buffer
	if code := runStatus([]string{"--admin-addr", o.adminAddr, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("status: %d %q", code, errOut.String())
	}
	var st status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.Command != "serve" || st.Version == "" || st.DataBytes == 0 || st.Store != "sqlite" || st.Workspaces != 1 ||
		st.Migrations == 0 || st.PublicURL != "https://cp.example.test" || st.SnapshotVersion == 0 || len(st.Runs) < 4 {
		t.Fatalf("status %+v", st)
	}
	byName := map[string]statusEdge{}
	for _, e := range st.Edges {
		byName[e.Name] = e
	}
	if e := byName["fra-1"]; e.ID != remote.ID || !e.Connected || e.Version != st.SnapshotVersion || e.Local || e.Addr == "" {
		t.Errorf("remote edge %+v, want connected at version %d", e, st.SnapshotVersion)
	}
	local := 0
	for _, e := range st.Edges {
		if e.Local {
			local++
			if !e.Connected || e.Version == 0 {
				t.Errorf("in-process edge %+v", e)
			}
		}
	}
	if local != 1 || len(st.Edges) != 2 {
		t.Errorf("edges %+v, want the in-process one and fra-1", st.Edges)
	}
	out.Reset()
	if code := runStatus([]string{"--admin-addr", o.adminAddr}, &out, &errOut); code != 0 {
		t.Fatalf("status: %d %q", code, errOut.String())
	}
	for _, w := range []string{"running", "platform serve", "version", "live ingest", "jobs", "queued", "snapshot version", "EDGE", "fra-1", "public URL"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("status printed %q, want %q in it", out.String(), w)
		}
	}

	s.stop()
	out.Reset()
	errOut.Reset()
	if code := runStatus([]string{"--admin-addr", o.adminAddr, "--data", o.data}, &out, &errOut); code != 3 ||
		!strings.Contains(errOut.String(), "nothing answers at the admin address") || !strings.Contains(out.String(), "running  ") ||
		!strings.Contains(out.String(), "jobs") || !strings.Contains(out.String(), "fra-1") {
		t.Fatalf("status of a stopped platform: %d %q %q", code, out.String(), errOut.String())
	}
	if code := runStatus([]string{"--bogus"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: %d", code)
	}
}
