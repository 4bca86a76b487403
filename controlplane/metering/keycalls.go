package metering

import (
	"context"
	"log/slog"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
)

// DefaultKeyCallsFlush is how often counted API-key calls are written.
const DefaultKeyCallsFlush = 10 * time.Second

// KeyCalls counts API-key calls (metric api_key_calls) in memory and writes
// them as one usage event per workspace, project and UTC day per flush, so
// counting costs a map increment on the request path, not a database
// write. Run writes them every flush interval, Close at the end; a flush
// that fails is retried with the same batch id, so nothing is counted
// twice.
type KeyCalls struct {
	agg   *Aggregator
	every time.Duration
	log   *slog.Logger
}

// NewKeyCalls returns a counter writing through rec every interval while
// Run runs (DefaultKeyCallsFlush when not positive), with failed flushes
// logged to log (slog.Default when nil). rec should also be a
// BatchRecorder (the Meter is) for flushes retried without double
// counting; a plain Recorder gets one Record per event. When rec has a
// Now method (the Meter does) calls are stamped by it.
func NewKeyCalls(rec Recorder, every time.Duration, log *slog.Logger) *KeyCalls {
	clk, _ := rec.(clock.Clock)
	br, ok := rec.(BatchRecorder)
	if !ok {
		br = eachRecorder{rec}
	}
	if every <= 0 {
		every = DefaultKeyCallsFlush
	}
	if log == nil {
		log = slog.Default()
	}
	return &KeyCalls{agg: NewAggregator(br, clk), every: every, log: log}
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

// Run writes the counted calls every flush interval until ctx ends; a
// failed flush is logged and retried by the next. Close writes the rest.
func (k *KeyCalls) Run(ctx context.Context) error {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := k.Flush(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("metering: api key calls", "err", err)
			}
		}
	}
}

// Close writes what is counted. Call it after Run has returned.
func (k *KeyCalls) Close() error { return k.Flush(context.Background()) }
