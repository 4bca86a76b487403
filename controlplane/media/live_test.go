package media

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/internal/freeport"
)

// freeAddr returns a loopback address nobody listens on, for a server
// another process (nginx) binds later. The port is below the kernel's
// ephemeral range: a port picked there (":0") is closed before nginx binds
// it, and meanwhile any outgoing connection of the tests running in
// parallel may take it as its local port, which is how a live test's
// publisher once found nobody listening.
func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// publish starts ffmpeg sending a test pattern to url (output options
// such as -tls_verify before it); the channel gets its exit error, with
// what ffmpeg wrote to its standard error.
func publish(t *testing.T, url string, opts ...string) (*exec.Cmd, chan error) {
	t.Helper()
	args := []string{"-hide_banner", "-loglevel", "error", "-nostdin", "-re",
		"-f", "lavfi", "-i", "testsrc=size=160x120:rate=10", "-f", "lavfi", "-i", "sine=frequency=440",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "10", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-t", "120", "-f", "flv"}
	cmd := exec.Command("ffmpeg", append(append(args, opts...), url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // written by exec's copier, read after Wait
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		done <- err
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return cmd, done
}

func TestLiveChannel(t *testing.T) {
	needLive(t)
	e := newEnv(t, plans.Pro, Config{NoWorkers: true, Live: &LiveConfig{Listen: freeAddr(t), UpdateSeconds: 1}})
	var c Created
	e.must(201, ownerKey, "POST", "/api/projects/"+e.project+"/media", map[string]any{"name": "Show", "kind": "live"}).Decode(t, &c)
	if c.Asset.Status != StatusIdle || !strings.HasPrefix(c.StreamKey, "sk_") || !strings.HasPrefix(c.IngestURL, "rtmp://") {
		t.Fatalf("created %+v", c)
	}
	id := c.Asset.ID
	// The stream key is readable by the owner, not by a read-only key.
	if a := e.asset(id); a.StreamKey != c.StreamKey || a.IngestURL != c.IngestURL {
		t.Fatalf("owner read %+v", a)
	}
	var ro AssetAnswer
	e.must(200, e.Key("read_only", ""), "GET", "/api/media/"+id, nil).Decode(t, &ro)
	if ro.Asset.StreamKey != "" || ro.Asset.IngestURL != "" {
		t.Fatalf("read-only key sees %+v", ro.Asset)
	}

	refused := func(name, url string) {
		t.Helper()
		_, done := publish(t, url)
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: publisher ended cleanly", name)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: publisher was not refused", name)
		}
	}
	refused("idle channel", c.IngestURL+"/"+c.StreamKey)
	var a AssetAnswer
	e.must(200, ownerKey, "PATCH", "/api/media/"+id, map[string]any{"action": "go-live"}).Decode(t, &a)
	if a.Asset.Status != StatusLive {
		t.Fatalf("go-live %+v", a.Asset)
	}
	refused("wrong key", c.IngestURL+"/sk_"+strings.Repeat("A", 43))
	refused("channel id as key", c.IngestURL+"/"+id)
	refused("straight into the HLS application", strings.Replace(c.IngestURL, "/live", "/hls", 1)+"/"+id)

	_, done := publish(t, c.IngestURL+"/"+c.StreamKey)
	waitLivePlaylist(t, e, id, done)
	// end-stream cuts the publisher.
	e.must(200, ownerKey, "PATCH", "/api/media/"+id, map[string]any{"action": "end-stream"})
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("end-stream did not cut the publisher")
	}
	for _, tc := range []struct{ action, code string }{{"", "invalid_request"}, {"pause", "invalid_request"}} {
		if r := e.do(ownerKey, "PATCH", "/api/media/"+id, map[string]any{"action": tc.action}); r.Status != 400 {
			t.Fatalf("%q: %d", tc.action, r.Status)
		}
	}
	// Live channels go with their project.
	if err := e.Projects.Delete(context.Background(), e.Owner, e.project); err != nil {
		t.Fatal(err)
	}
	e.must(404, ownerKey, "GET", "/api/media/"+id, nil)
}

// waitLivePlaylist waits until the channel's live playlist lists segments
// (never naming the stream key), failing if the publisher ends first.
func waitLivePlaylist(t *testing.T, e *env, id string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.do("", "GET", "/media/"+id+"/index.m3u8", nil)
		if r.Status == 200 && strings.Contains(string(r.Body), ".ts") {
			if strings.Contains(string(r.Body), "sk_") {
				t.Fatal("playlist holds the stream key")
			}
			return
		}
		select {
		case err := <-done:
			t.Fatalf("publisher with the right key ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			files, _ := exec.Command("find", filepath.Join(e.Dir, "media", "live")).CombinedOutput()
			logb, _ := os.ReadFile(filepath.Join(e.Dir, "media", "live", "error.log"))
			t.Fatalf("no live playlist: %d %s\n%s\n%s", r.Status, r.Body, files, logb)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
