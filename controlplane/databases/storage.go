package databases

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/plans"
)

// storage keeps what the storage hold needs in memory: each database's
// last measured size (taken after every write, and when a database is
// first opened), the databases of each workspace and each workspace's plan
// for a few seconds.
type storage struct {
	mu      sync.Mutex
	sizes   map[string]int64
	changed map[string]bool
	lists   map[string][]string // workspace -> ready databases
	plans   map[string]cachedPlan
}

type cachedPlan struct {
	name plans.Name
	at   time.Time
}

func newStorage() *storage {
	return &storage{sizes: map[string]int64{}, changed: map[string]bool{}, lists: map[string][]string{}, plans: map[string]cachedPlan{}}
}

// set records database id's size.
func (st *storage) set(id string, size int64) {
	st.mu.Lock()
	if st.sizes[id] != size {
		st.changed[id] = true
	}
	st.sizes[id] = size
	st.mu.Unlock()
}

// size returns database id's last measured size.
func (st *storage) size(id string) (int64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n, ok := st.sizes[id]
	return n, ok
}

// dirty returns the sizes that changed since the last call.
func (st *storage) dirty() map[string]int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make(map[string]int64, len(st.changed))
	for id := range st.changed {
		out[id] = st.sizes[id]
	}
	st.changed = map[string]bool{}
	return out
}

// forget drops a deleted database and the list of its workspace.
func (st *storage) forget(workspace, id string) {
	st.mu.Lock()
	delete(st.sizes, id)
	delete(st.changed, id)
	delete(st.lists, workspace)
	st.mu.Unlock()
}

// invalidate drops the list of a workspace's databases.
func (st *storage) invalidate(workspace string) {
	st.mu.Lock()
	delete(st.lists, workspace)
	st.mu.Unlock()
}

// plan returns the workspace's plan, read again after planTTL.
func (s *Service) plan(ctx context.Context, workspace string) plans.Name {
	now := s.d.Clock.Now()
	st := s.storage
	st.mu.Lock()
	p, ok := st.plans[workspace]
	st.mu.Unlock()
	if ok && now.Sub(p.at) < planTTL && !now.Before(p.at) {
		return p.name
	}
	name := s.d.Plans.Plan(ctx, workspace)
	st.mu.Lock()
	st.plans[workspace] = cachedPlan{name: name, at: now}
	st.mu.Unlock()
	return name
}

// allowance is the workspace's database storage allowance.
func (s *Service) allowance(ctx context.Context, workspace string) (int64, plans.Limits) {
	pl := plans.Of(s.plan(ctx, workspace))
	if l := s.Limits(); l.StorageBytes > 0 {
		return l.StorageBytes, pl
	}
	return pl.DatabaseStorageBytes, pl
}

// usedStorage sums the sizes of the workspace's databases, measuring those
// not measured since this process started.
func (s *Service) usedStorage(ctx context.Context, workspace string) (int64, error) {
	st := s.storage
	st.mu.Lock()
	ids, ok := st.lists[workspace]
	st.mu.Unlock()
	if !ok {
		var err error
		if ids, err = s.records.readyIDs(ctx, workspace); err != nil {
			return 0, err
		}
		st.mu.Lock()
		st.lists[workspace] = ids
		st.mu.Unlock()
	}
	var total int64
	for _, id := range ids {
		n, ok := st.size(id)
		if !ok {
			// Opening a database measures it. One that cannot be opened
			// holds nothing that counts now; its own queries say why.
			h, err := s.pinned(ctx, id)
			if err != nil {
				s.d.Logger.Warn("databases: not measured", "database", id, "err", err)
				continue
			}
			h.leave()
			n, _ = st.size(id)
		}
		total += n
	}
	return total, nil
}

// hold applies the storage allowance to a request: when the workspace's
// databases use it up, a request holding a statement that adds data, or a
// DELETE on a database with triggers (which may add rows), is refused with
// 402: usage_limit on plans that are not charged for more (hobby),
// usage_paused on paid plans whose workspace cannot pay for it. Reads,
// DELETE without triggers and DROP still run.
func (s *Service) hold(ctx context.Context, rec record, h *handle, stmts []Statement) error {
	adds, deletes := false, false
	for _, st := range stmts {
		adds = adds || st.AddsData()
		deletes = deletes || st.Verb == VerbDelete
	}
	if !adds && !deletes {
		return nil
	}
	allowance, pl := s.allowance(ctx, rec.Workspace)
	used, err := s.usedStorage(ctx, rec.Workspace)
	if err != nil {
		return err
	}
	if used < allowance {
		return nil
	}
	if !adds {
		triggers, err := h.hasTriggers(ctx)
		if err != nil || !triggers {
			return err
		}
	}
	if pl.StorageOverage {
		if f := s.funder.Load(); f != nil && *f != nil {
			ok, err := (*f).CanFundStorage(ctx, rec.Workspace, used-allowance)
			if err != nil || ok {
				return err
			}
		}
		return api.E(api.KindPaymentRequired, "usage_paused",
			"the workspace's database storage (%s of %s) is past its allowance and cannot be paid for: statements that add data are held; reads, DELETE and DROP still run", byteSize(used), byteSize(allowance)).
			With("usedBytes", used).With("allowanceBytes", allowance)
	}
	return api.E(api.KindPaymentRequired, "usage_limit",
		"the plan's database storage (%s of %s) is used up: statements that add data are held; reads, DELETE and DROP still run, and a larger plan lifts the hold", byteSize(used), byteSize(allowance)).
		With("usedBytes", used).With("allowanceBytes", allowance)
}

// byteSize renders a byte count in decimal units, as plans are written.
func byteSize(n int64) string {
	units := []string{"bytes", "KB", "MB", "GB", "TB"}
	f, u := float64(n), 0
	for f >= 999.5 && u < len(units)-1 {
		f /= 1000
		u++
	}
	prec := 2
	switch {
	case f >= 100:
		prec = 0
	case f >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + " " + units[u]
}

const triggersSQL = `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger')`

// hasTriggers reports whether the database has a trigger.
func (h *handle) hasTriggers(ctx context.Context) (bool, error) {
	c, err := h.readers.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	var v [1]int64
	err = c.Raw(func(dc any) error { return dc.(*conn).scanInts(ctx, triggersSQL, v[:]) })
	return v[0] == 1, err
}
