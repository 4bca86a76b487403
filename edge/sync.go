package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// maxSnapshotBytes bounds a configuration snapshot read from the control
// plane or from disk.
const maxSnapshotBytes = 512 << 20

// maxBackoff bounds the wait between failed polls.
const maxBackoff = 30 * time.Second

// ErrTokenRefused is returned by a poll when the control plane refuses the
// edge token.
var ErrTokenRefused = errors.New("edge: the control plane refused the edge token")

// statePath is where the last good configuration is kept.
func (e *Edge) statePath() string { return filepath.Join(e.cfg.DataDir, "edge", "config.json") }

// loadPersisted applies the configuration kept on disk, so a restarted edge
// serves the last good configuration while the control plane is down. A
// missing file is not an error.
func (e *Edge) loadPersisted(ctx context.Context) error {
	raw, err := os.ReadFile(e.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("edge: read saved configuration: %w", err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("edge: saved configuration %s: %w", e.statePath(), err)
	}
	if err := e.apply(ctx, &s, nil); err != nil {
		return err
	}
	e.log.Info("edge: serving the saved configuration", "version", s.Version, "sites", len(s.Sites), "path", e.statePath())
	return nil
}

// syncLoop long-polls the control plane for new configuration until ctx
// ends, applying each new snapshot. Failures back off with jitter and leave
// the configuration in use as it is.
func (e *Edge) syncLoop(ctx context.Context) {
	backoff := time.Second
	failures := 0
	for ctx.Err() == nil {
		var after int64
		if t := e.table.Load(); t != nil {
			after = t.version
		}
		s, raw, err := e.poll(ctx, after)
		if err == nil && s != nil {
			err = e.apply(ctx, s, raw)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.metrics.syncErrors.Inc()
			failures++
			if failures == 1 || failures%20 == 0 {
				e.log.Warn("edge: configuration sync failed; serving the configuration in use", "version", after,
					"failures", failures, "err", err)
			}
			sleep(ctx, backoff/2+rand.N(backoff/2+1))
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		if failures > 0 {
			e.log.Info("edge: configuration sync recovered", "failures", failures)
		}
		failures, backoff = 0, time.Second
	}
}

// poll asks for a configuration newer than after. It returns nil when
// nothing changed within the wait.
func (e *Edge) poll(ctx context.Context, after int64) (*snapshot.Snapshot, []byte, error) {
	wait := e.cfg.SyncWait
	if after == 0 {
		wait = 0
	}
	ctx, cancel := context.WithTimeout(ctx, wait+30*time.Second)
	defer cancel()
	u := e.cfg.ControlPlane + snapshot.ConfigPath + "?after=" + strconv.FormatInt(after, 10) +
		"&wait=" + strconv.Itoa(int(wait/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.cfg.Token)
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: poll configuration: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		e.metrics.lastSync.SetToCurrentTime()
		return nil, nil, nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, nil, ErrTokenRefused
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, nil, fmt.Errorf("edge: poll configuration: control plane answered %s", resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxSnapshotBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("edge: read configuration: %w", err)
	}
	if len(raw) > maxSnapshotBytes {
		return nil, nil, fmt.Errorf("edge: configuration larger than %d bytes", maxSnapshotBytes)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("edge: decode configuration: %w", err)
	}
	e.metrics.lastSync.SetToCurrentTime()
	return &s, raw, nil
}

// apply compiles s, makes sure every file it serves is here, swaps it in
// atomically and, when raw is given, saves it as the last good
// configuration. A snapshot that does not compile is refused and the one
// in use stays.
func (e *Edge) apply(ctx context.Context, s *snapshot.Snapshot, raw []byte) error {
	t, err := compile(s, e.origins.get)
	if err != nil {
		return err
	}
	if err := e.blobs.ensure(ctx, t.blobs); err != nil {
		return fmt.Errorf("edge: configuration %d: fetching files: %w", s.Version, err)
	}
	prev := e.table.Swap(t)
	e.preloadDomainCerts(e.preload, s.Domains)
	keep := map[string]bool{}
	for _, st := range t.sites {
		if st.dep.origin != nil {
			keep[st.dep.origin.key] = true
		}
	}
	e.origins.retain(keep)
	e.metrics.version.Set(float64(t.version))
	e.metrics.applied.Inc()
	e.metrics.ready.Set(1)
	e.ready.Store(true)
	var from int64
	if prev != nil {
		from = prev.version
	}
	e.log.Info("edge: configuration applied", "version", t.version, "from", from, "sites", len(t.sites))
	if raw != nil {
		if err := writeFileAtomic(e.statePath(), raw, 0o600); err != nil {
			e.log.Error("edge: cannot save the configuration; a restart without the control plane would serve an older one",
				"path", e.statePath(), "err", err)
		}
	}
	return nil
}

// writeFileAtomic writes data to path through a synced temporary file and
// a rename, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
