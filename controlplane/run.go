package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/store"
)

// loop is one piece of background work Run runs: an area's Run, the job
// workers, the runtime's reaper.
type loop struct {
	name string
	run  func(ctx context.Context) error
}

// onRun adds fn to what Run runs, under name (in errors).
func (cp *ControlPlane) onRun(name string, fn func(ctx context.Context) error) {
	cp.loops = append(cp.loops, loop{name: name, run: fn})
}

// Run runs every background loop of the control plane until ctx ends: the
// job workers, the flushers of counted calls and usage, the origin prober,
// the runtime's reaper, vector indexing and the areas' listeners for
// other replicas' changes. New starts none of them. Run returns once every
// loop has stopped; a loop that fails stops the others, and Run returns
// its error. Close releases what is left (and writes what the flushers
// still hold) once Run has returned.
func (cp *ControlPlane) Run(ctx context.Context) error {
	// On SQLite this process is the only one using the data directory, so
	// jobs a killed predecessor was running are taken back at once rather
	// than when their leases expire.
	if cp.DB.Dialect() == store.SQLite {
		if n, err := cp.Jobs.ReclaimAbandoned(ctx); err != nil {
			cp.cfg.Logger.Warn("controlplane: reclaim abandoned jobs", "err", err)
		} else if n > 0 {
			cp.cfg.Logger.Info("controlplane: jobs of a stopped process taken back", "jobs", n)
		}
	}
	return runLoops(ctx, cp.loops)
}

// runLoops runs every loop in a goroutine of its own until ctx ends, then
// waits for all of them (the shape of Prometheus's run.Group). A loop
// returning early with nil just ends; one returning an error (other than
// the context's end) stops the others, and the first such error is
// returned.
func runLoops(ctx context.Context, loops []loop) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(loops))
	for _, l := range loops {
		go func() {
			err := l.run(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				cancel()
				errs <- fmt.Errorf("controlplane: %s: %w", l.name, err)
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range loops {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
