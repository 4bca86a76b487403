package metering

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
)

// DefaultKeyCallsFlush is how often counted API-key calls are written.
const DefaultKeyCallsFlush = 10 * time.Second

// KeyCalls counts API-key calls (metric api_key_calls) in memory and writes
// them as one usage event per workspace and project per flush, so counting
// costs a map increment on the request path, not a database write. Calls
// are written every flush interval and at Close.
type KeyCalls struct {
	rec Recorder

	mu     sync.Mutex
	counts map[keyCallsKey]float64

	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool
}

type keyCallsKey struct{ workspace, project string }

// NewKeyCalls returns a counter writing through rec.
func NewKeyCalls(rec Recorder) *KeyCalls {
	return &KeyCalls{rec: rec, counts: map[keyCallsKey]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// KeyCall counts one request made with an API key (api.CallRecorder).
func (k *KeyCalls) KeyCall(p *auth.Principal) {
	if p == nil || p.KeyID == "" {
		return
	}
	k.mu.Lock()
	k.counts[keyCallsKey{p.WorkspaceID, p.ProjectID}]++
	k.mu.Unlock()
}

// Flush writes the counted calls; calls that could not be written are
// counted again for the next flush.
func (k *KeyCalls) Flush(ctx context.Context) error {
	k.mu.Lock()
	counts := k.counts
	k.counts = map[keyCallsKey]float64{}
	k.mu.Unlock()
	var errs []error
	for key, n := range counts {
		if err := k.rec.Record(ctx, Event{Workspace: key.workspace, Project: key.project, Metric: APIKeyCalls, Quantity: n}); err != nil {
			errs = append(errs, err)
			k.mu.Lock()
			k.counts[key] += n
			k.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Run flushes every interval until Close; errors go to onErr.
func (k *KeyCalls) Run(every time.Duration, onErr func(error)) {
	if !k.started.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(k.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-t.C:
				if err := k.Flush(context.Background()); err != nil && onErr != nil {
					onErr(err)
				}
			}
		}
	}()
}

// Close stops Run (when it was started) and writes what is counted.
func (k *KeyCalls) Close() error {
	k.once.Do(func() { close(k.stop) })
	if k.started.Load() {
		<-k.done
	}
	return k.Flush(context.Background())
}
