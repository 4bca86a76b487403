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
	// remote marks sizes of databases other replicas own, as their owners
	// recorded them; they are never written back.
	remote map[string]bool
}

type cachedPlan struct {
	name plans.Name
	at   time.Time
}

func newStorage() *storage {
	return &storage{sizes: map[string]int64{}, changed: map[string]bool{}, lists: map[string][]string{}, plans: map[string]cachedPlan{},
		remote: map[string]bool{}}
}

// set records database id's size.
func (st *storage) set(id string, size int64) {
	st.mu.Lock()
	st.setLocked(id, size)
	st.mu.Unlock()
}

func (st *storage) setLocked(id string, size int64) {
	delete(st.remote, id)
	if old, ok := st.sizes[id]; !ok || old != size {
		st.changed[id] = true
	}
	st.sizes[id] = size
}

// size returns database id's last measured size.
func (st *storage) size(id string) (int64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n, ok := st.sizes[id]
	return n, ok
}

// localSize returns database id's size as measured by this node.
func (st *storage) localSize(id string) (int64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n, ok := st.sizes[id]
	return n, ok && !st.remote[id]
}

// setRemote records the size another replica recorded for a database it
// owns.
func (st *storage) setRemote(id string, size int64) {
	st.mu.Lock()
	st.sizes[id] = size
	st.remote[id] = true
	st.mu.Unlock()
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
	delete(st.remote, id)
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
// not measured since this process started, and returns their ids.
func (s *Service) usedStorage(ctx context.Context, workspace string) ([]string, int64, error) {
	if s.cluster() != nil {
		return s.usedStorageShared(ctx, workspace)
	}
	st := s.storage
	st.mu.Lock()
	ids, ok := st.lists[workspace]
	st.mu.Unlock()
	if !ok {
		var err error
		if ids, err = s.records.readyIDs(ctx, workspace); err != nil {
			return nil, 0, err
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
	return ids, total, nil
}

// effectSlack is how much a request that the hold lets run by its verbs
// (DELETE, DROP, PRAGMA, ...) may grow a database while the workspace is
// past its allowance: a DELETE can split a b-tree page or two as it
// rebalances. Past it the request is held by its effect.
const effectSlack = 16 << 10

// hold applies the storage allowance to a request before it runs, from the
// sizes in memory: when the workspace's databases use it up, a request
// holding a statement that adds data (Statement.AddsData), or a DELETE on a
// database where a delete can add data (a trigger, or a foreign key whose
// ON DELETE action is SET NULL or SET DEFAULT), is refused with 402:
// usage_limit on plans that are not charged for more (hobby), usage_paused
// on paid plans whose workspace cannot pay for it. Reads, other DELETEs and
// DROP run.
//
// It returns the gate the request passes on the writer, inside its
// transaction, where writes are serialised: nil when the workspace pays for
// what it stores past the allowance.
func (s *Service) hold(ctx context.Context, rec record, h *handle, stmts []Statement) (*gate, error) {
	adds, deletes := false, false
	for _, st := range stmts {
		adds = adds || st.AddsData()
		deletes = deletes || st.Verb == VerbDelete
	}
	allowance, pl := s.allowance(ctx, rec.Workspace)
	ids, used, err := s.usedStorage(ctx, rec.Workspace)
	if err != nil {
		return nil, err
	}
	g := &gate{s: s, rec: rec, ids: ids, allowance: allowance, plan: pl, adds: adds}
	if used < allowance || (!adds && !deletes) {
		return g, nil
	}
	if !adds {
		mayAdd, err := h.deleteMayAdd(ctx)
		if err != nil || !mayAdd {
			return g, err
		}
		g.adds = true
	}
	if err := s.holdError(ctx, rec, pl, used, allowance); err != nil {
		return nil, err
	}
	return nil, nil // the workspace pays for the excess
}

// holdError is the refusal of a request that would add data to a workspace
// using used bytes of allowance, or nil when a StorageFunder says the
// workspace pays for the excess.
func (s *Service) holdError(ctx context.Context, rec record, pl plans.Limits, used, allowance int64) error {
	if pl.StorageOverage {
		if f := s.funder.Load(); f != nil && *f != nil {
			ok, err := (*f).CanFundStorage(ctx, rec.Workspace, max(0, used-allowance))
			if err != nil || ok {
				return err
			}
		}
		return api.E(api.KindPaymentRequired, "usage_paused",
			"the workspace's database storage (%s of %s) is past its allowance and cannot be paid for (no credit or Balance left): statements that add data are held; reads, DELETE and DROP still run", byteSize(used), byteSize(allowance)).
			With("usedBytes", used).With("allowanceBytes", allowance)
	}
	return api.E(api.KindPaymentRequired, "usage_limit",
		"the plan's database storage (%s of %s) is used up: statements that add data are held; reads, DELETE and DROP still run, and a larger plan lifts the hold", byteSize(used), byteSize(allowance)).
		With("usedBytes", used).With("allowanceBytes", allowance)
}

// gate is the storage hold applied where writes are serialised: on the
// writer, inside the request's transaction, after its statements ran and
// before it commits. Concurrent requests all pass the check before they
// run (the sizes then are those before any of them); the gate sees the
// sizes every earlier commit left, so of requests racing at the line at
// most the one that crosses it commits. The sizes of a workspace's
// databases are summed under one mutex and the admitted request's size is
// recorded before it commits (and put back should the commit fail), so
// this holds across the workspace's databases too, without holding a lock
// over the commit's fsync.
type gate struct {
	s         *Service
	rec       record
	ids       []string
	allowance int64
	plan      plans.Limits
	// adds is a request the hold stops by its verbs.
	adds bool
}

// admit decides, with the database's size after the request's statements,
// whether the request may commit. It returns what to call once the commit
// is done (or failed).
func (g *gate) admit(ctx context.Context, after int64) (func(committed bool), error) {
	st, id := g.s.storage, g.rec.ID
	st.mu.Lock()
	before := st.sizes[id]
	used := before
	for _, other := range g.ids {
		if other != id {
			used += st.sizes[other]
		}
	}
	held := used >= g.allowance && (g.adds || after-before > effectSlack)
	if !held {
		return st.reserveLocked(id, before, after), nil
	}
	st.mu.Unlock()
	if err := g.s.holdError(ctx, g.rec, g.plan, used, g.allowance); err != nil {
		return nil, err
	}
	st.mu.Lock()
	return st.reserveLocked(id, st.sizes[id], after), nil
}

// reserveLocked records after as database id's size ahead of its commit and
// unlocks; the function it returns puts before back when the commit failed
// and nothing else changed the size meanwhile.
func (st *storage) reserveLocked(id string, before, after int64) func(bool) {
	st.setLocked(id, after)
	st.mu.Unlock()
	return func(committed bool) {
		if committed {
			return
		}
		st.mu.Lock()
		if st.sizes[id] == after {
			st.setLocked(id, before)
		}
		st.mu.Unlock()
	}
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

// deleteMayAddSQL tells whether a DELETE can add data to the database: a
// trigger (on any table: a foreign-key CASCADE reaches tables the DELETE
// does not name), or a foreign key whose ON DELETE action writes a value
// (SET NULL, SET DEFAULT: a default can be a large blob).
const deleteMayAddSQL = `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger')
	OR EXISTS (SELECT 1 FROM sqlite_schema AS s, pragma_foreign_key_list(s.name) AS f
		WHERE s.type = 'table' AND f.on_delete IN ('SET NULL', 'SET DEFAULT'))`

// deleteMayAdd reports whether a DELETE can add data to the database.
func (h *handle) deleteMayAdd(ctx context.Context) (bool, error) {
	c, err := h.readers.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	var v [1]int64
	err = c.Raw(func(dc any) error { return dc.(*conn).scanInts(ctx, deleteMayAddSQL, v[:]) })
	return v[0] == 1, err
}
