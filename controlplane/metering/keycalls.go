package metering

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
)

// DefaultKeyCallsFlush is how often counted API-key calls are written.
const DefaultKeyCallsFlush = 10 * time.Second

// KeyCalls counts API-key calls (metric api_key_calls) in memory and writes
// them as one usage event per workspace, project and UTC day per flush, so
// counting costs a map increment on the request path, not a database
// write. Calls are written every flush interval and at Close; a flush that
// fails is retried with the same batch id, so nothing is counted twice.
type KeyCalls struct {
	agg *Aggregator

	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool
}

// NewKeyCalls returns a counter writing through rec. rec should also be a
// BatchRecorder (the Meter is) for flushes retried without double
// counting; a plain Recorder gets one Record per event. When rec has a
// Now method (the Meter does) calls are stamped by it.
func NewKeyCalls(rec Recorder) *KeyCalls {
	now := time.Now
	if c, ok := rec.(interface{ Now() time.Time }); ok {
		now = c.Now
	}
	br, ok := rec.(BatchRecorder)
	if !ok {
		br = eachRecorder{rec}
	}
	return &KeyCalls{agg: NewAggregator(br, now), stop: make(chan struct{}), done: make(chan struct{})}
}

// eachRecorder writes a batch event by event (for a Recorder that cannot
// write batches; it is not idempotent).
type eachRecorder struct{ rec Recorder }

func (e eachRecorder) RecordBatch(ctx context.Context, _ string, events []Event) error {
	for i := range events {
		if err := e.rec.Record(ctx, events[i]); err != nil {
			// The retry skips what was written (zero quantities are not
			// recorded).
			for j := range i {
				events[j].Quantity = 0
			}
			return err
		}
	}
	return nil
}

// KeyCall counts one request made with an API key (api.CallRecorder). It
// does not allocate once the workspace and project were seen that day.
func (k *KeyCalls) KeyCall(p *auth.Principal) {
	if p == nil || p.KeyID == "" {
		return
	}
	k.agg.Add(p.WorkspaceID, p.ProjectID, APIKeyCalls, 1, time.Time{})
}

// Flush writes the counted calls; a batch that could not be written is
// written by the next flush, under the same id.
func (k *KeyCalls) Flush(ctx context.Context) error { return k.agg.Flush(ctx) }

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
