package edge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// maxPendingRows bounds the counts kept while the control plane cannot be
// reached; past it the oldest rows are dropped (the spec allows counts to
// be close rather than exact).
const maxPendingRows = 10_000

// flusher sends drained Shield counts to the control plane. A batch keeps
// its id until the control plane accepts it, so a batch sent again after a
// lost answer is not counted twice; what is counted meanwhile waits in
// queued for the next batch.
type flusher struct {
	e       *Edge
	pending *snapshot.CountBatch
	queued  []rules.Count
}

// flushLoop flushes every FlushInterval until ctx ends, then once more.
func (e *Edge) flushLoop(ctx context.Context) {
	f := &flusher{e: e}
	tick := time.NewTicker(e.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f.flush(final)
			f.flush(final)
			cancel()
			return
		case <-tick.C:
			f.flush(ctx)
		}
	}
}

// flush sends the pending batch, if any, then a batch of what was counted
// since.
func (f *flusher) flush(ctx context.Context) {
	if f.pending != nil {
		if !f.send(ctx, f.pending) {
			f.queue(f.e.counts.Drain())
			return
		}
		f.pending = nil
	}
	f.queue(f.e.counts.Drain())
	if len(f.queued) == 0 {
		return
	}
	f.pending = &snapshot.CountBatch{Batch: newBatchID(), Counts: f.queued}
	f.queued = nil
	if f.send(ctx, f.pending) {
		f.pending = nil
	}
}

// queue keeps rows for the next batch, up to maxPendingRows.
func (f *flusher) queue(rows []rules.Count) {
	if room := maxPendingRows - len(f.queued); len(rows) > room {
		f.e.log.Warn("edge: dropping shield counts the control plane could not take yet", "rows", len(rows)-max(room, 0))
		rows = rows[:max(room, 0)]
	}
	f.queued = append(f.queued, rows...)
}

// send posts a batch and reports whether the control plane took it.
func (f *flusher) send(ctx context.Context, b *snapshot.CountBatch) bool {
	e := f.e
	body, err := json.Marshal(b)
	if err != nil {
		e.log.Error("edge: encode counts", "err", err)
		return true // drop what cannot be encoded
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.ControlPlane+snapshot.CountsPath, bytes.NewReader(body))
	if err != nil {
		return true
	}
	req.Header.Set("Authorization", "Bearer "+e.cfg.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		e.metrics.flushErrors.Inc()
		e.log.Debug("edge: send counts", "err", err)
		return false
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusOK:
		var a snapshot.CountAnswer
		json.Unmarshal(data, &a)
		e.metrics.flushed.Add(float64(a.Accepted))
		return true
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusUnauthorized &&
		resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		e.log.Error("edge: control plane refused shield counts; dropping them", "status", resp.StatusCode, "body", string(data))
		return true
	}
	e.metrics.flushErrors.Inc()
	e.log.Debug("edge: send counts", "status", resp.StatusCode)
	return false
}

func newBatchID() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("edge-%s", hex.EncodeToString(b[:]))
}
