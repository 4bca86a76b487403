// Package placement records which control-plane node owns each file-backed
// resource (a customer database today, a vector collection next) and
// forwards a request that reaches another replica to the owner.
//
// Every replica has a node identity (NodeID, persisted in its data
// directory) and an address the other replicas reach it at (its URL). It
// registers itself in the nodes table and beats a heartbeat there; the
// placements table names the owner of each resource, written in the same
// transaction that creates the resource, by the node that creates it. A
// resource's file lives only on its owner: another replica never opens it,
// it forwards (Forwarder), or answers 503 when the owner is down. See
// SCALING.md at the repository root.
package placement

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Resource kinds placed on nodes.
const (
	// KindDatabase is a customer database (controlplane/databases).
	KindDatabase = "database"
)

// Defaults of Config.
const (
	// DefaultHeartbeatEvery is how often a node writes its heartbeat.
	DefaultHeartbeatEvery = 5 * time.Second
	// DefaultStaleAfter is how old a heartbeat may be before the node is
	// taken as down (six missed beats).
	DefaultStaleAfter = 30 * time.Second
	// MaxNodeID bounds a node id.
	MaxNodeID = 64
	// nodeIDFile is where a derived node id is kept in the data directory.
	nodeIDFile = "node-id"
	// maxCachedOwners bounds the in-memory owners; dropped whole beyond.
	maxCachedOwners = 100_000
	// staleReread is how long a read of the nodes saying an owner is down
	// is trusted before the nodes are read again.
	staleReread = time.Second
)

// Errors of the registry.
var (
	// ErrBadNodeID: a node id is 1 to 64 characters of a-z, 0-9, - and _.
	ErrBadNodeID = errors.New("placement: bad node id (1 to 64 characters of a-z, 0-9, - and _)")
	// ErrBadURL: a node URL is an absolute http or https address without
	// path, query or fragment.
	ErrBadURL = errors.New("placement: bad node url (absolute http:// or https:// address, no path, query or fragment)")
	// ErrNodeIDInUse: another live process (a fresh heartbeat, another
	// address) already runs under this node id.
	ErrNodeIDInUse = errors.New("placement: node id in use by another live node")
	// ErrUnplaced: the resource has no placement (it was created before
	// the node had an identity, or never existed).
	ErrUnplaced = errors.New("placement: resource has no owner")
	// ErrUnknownNode: a placement names a node that is not registered.
	ErrUnknownNode = errors.New("placement: owner node is not registered")
)

// Config is a node's identity and heartbeat.
type Config struct {
	// NodeID names this node (--node-id); empty derives one and keeps it
	// in Dir (see NodeID).
	NodeID string `json:"nodeId"`
	// URL is where the other replicas reach this node's API (--node-url),
	// for example http://10.0.0.5:7070.
	URL string `json:"url"`
	// Dir is the data directory a derived node id is kept in.
	Dir string `json:"dir"`
	// HeartbeatEvery is how often the heartbeat is written.
	HeartbeatEvery time.Duration `json:"heartbeatEvery"`
	// StaleAfter is how old a heartbeat may be before the node is down.
	StaleAfter time.Duration `json:"staleAfter"`
}

// Provision fills defaults and derives (or reads back) the node id.
func (c *Config) Provision() error {
	if c.HeartbeatEvery == 0 {
		c.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.NodeID == "" {
		id, err := NodeID(c.Dir)
		if err != nil {
			return err
		}
		c.NodeID = id
	}
	c.URL = strings.TrimRight(c.URL, "/")
	return nil
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if !ValidNodeID(c.NodeID) {
		return fmt.Errorf("placement: node id %q: %w", c.NodeID, ErrBadNodeID)
	}
	if err := validURL(c.URL); err != nil {
		return err
	}
	if c.HeartbeatEvery <= 0 || c.StaleAfter <= c.HeartbeatEvery {
		return fmt.Errorf("placement: stale after (%s) must exceed the heartbeat (%s)", c.StaleAfter, c.HeartbeatEvery)
	}
	return nil
}

// ValidNodeID reports whether id is usable as a node id.
func ValidNodeID(id string) bool {
	if id == "" || len(id) > MaxNodeID {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("placement: node url %q: %w", raw, ErrBadURL)
	}
	return nil
}

// NodeID returns the node id kept in dir/node-id, creating it (node-
// and 16 random hex digits) on first use, so that a node keeps its
// identity, and the resources it owns, across restarts.
func NodeID(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("placement: no data directory to keep the node id in")
	}
	path := filepath.Join(dir, nodeIDFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(raw))
		if !ValidNodeID(id) {
			return "", fmt.Errorf("placement: %s: %w", path, ErrBadNodeID)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("placement: read node id: %w", err)
	}
	var b8 [8]byte
	_, _ = rand.Read(b8[:]) // crypto/rand.Read never fails
	id := fmt.Sprintf("node-%x", b8)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("placement: node id: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return NodeID(dir)
	}
	if err != nil {
		return "", fmt.Errorf("placement: node id: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("placement: write node id: %w", err)
	}
	return id, nil
}

// Node is a registered control-plane node.
type Node struct {
	// ID names the node.
	ID string `json:"id"`
	// URL is where the other replicas reach its API.
	URL string `json:"url"`
	// LastSeen is its last heartbeat.
	LastSeen time.Time `json:"lastSeen"`
}

// Owner is the answer of Registry.Owner.
type Owner struct {
	Node
	// Self is true when this node owns the resource.
	Self bool
	// Stale is true when the owner's heartbeat is older than StaleAfter.
	Stale bool
}

// Registry is a node's view of the nodes and placements tables.
type Registry struct {
	db  *store.DB
	clk clock.Clock
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	owners  map[string]string // kind/id -> node id
	nodes   map[string]Node
	nodesAt time.Time // clock time of the last read of nodes
}

// Deps are what a Registry is built on.
type Deps struct {
	// DB holds the nodes and placements tables.
	DB *store.DB
	// Clock dates heartbeats (clock.System when nil).
	Clock clock.Clock
	// Logger receives failed heartbeats (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	if d.DB == nil {
		return fmt.Errorf("%w: DB", ErrNotConfigured)
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("placement: missing dependencies")

// New registers this node in the store (hence ctx), refusing a node id
// another live node uses. It starts nothing: Run beats its heart.
func New(ctx context.Context, cfg Config, d Deps) (*Registry, error) {
	if err := cfg.Provision(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	r := &Registry{db: d.DB, clk: d.Clock, cfg: cfg, log: d.Logger, owners: map[string]string{}, nodes: map[string]Node{}}
	if err := r.register(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Config returns the node's configuration, defaults filled.
func (r *Registry) Config() Config { return r.cfg }

// Self returns this node.
func (r *Registry) Self() Node { return Node{ID: r.cfg.NodeID, URL: r.cfg.URL, LastSeen: r.clk.Now()} }

// register writes this node's row; a row of the same id with another
// address and a fresh heartbeat is another live process: refused.
func (r *Registry) register(ctx context.Context) error {
	now := r.clk.Now()
	return r.db.Tx(ctx, func(tx *sql.Tx) error {
		var url, seen string
		err := tx.QueryRowContext(ctx, `SELECT url, last_seen FROM nodes WHERE id = ?`, r.cfg.NodeID).Scan(&url, &seen)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("placement: register: %w", err)
		case url != r.cfg.URL && now.Sub(store.ParseTime(seen)) < r.cfg.StaleAfter:
			return fmt.Errorf("placement: register %s at %s: %w (%s, heartbeat %s ago)", r.cfg.NodeID, r.cfg.URL, ErrNodeIDInUse,
				url, now.Sub(store.ParseTime(seen)).Round(time.Second))
		}
		at := store.FormatTime(now)
		_, err = tx.ExecContext(ctx, `INSERT INTO nodes(id, url, started_at, last_seen) VALUES (?,?,?,?)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, started_at = excluded.started_at, last_seen = excluded.last_seen`,
			r.cfg.NodeID, r.cfg.URL, at, at)
		if err != nil {
			return fmt.Errorf("placement: register: %w", err)
		}
		return nil
	})
}

// Heartbeat writes this node's heartbeat now and reads the other nodes'.
func (r *Registry) Heartbeat(ctx context.Context) error {
	_, err := r.db.ExecContext(ctx, `UPDATE nodes SET last_seen = ?, url = ? WHERE id = ?`,
		store.FormatTime(r.clk.Now()), r.cfg.URL, r.cfg.NodeID)
	if err != nil {
		return fmt.Errorf("placement: heartbeat: %w", err)
	}
	return r.readNodes(ctx)
}

// Run writes this node's heartbeat every Config.HeartbeatEvery until ctx
// ends. The node's row stays after: its resources still belong to it, and
// it answers for them again when it comes back.
func (r *Registry) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			beat, cancel := context.WithTimeout(ctx, r.cfg.HeartbeatEvery)
			if err := r.Heartbeat(beat); err != nil && ctx.Err() == nil {
				r.log.Warn("placement: heartbeat", "node", r.cfg.NodeID, "err", err)
			}
			cancel()
		}
	}
}

// Nodes lists the registered nodes as last read.
func (r *Registry) Nodes(ctx context.Context) ([]Node, error) {
	if err := r.readNodes(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Node, 0, len(r.nodes))
	for _, n := range r.nodes {
		out = append(out, n)
	}
	return out, nil
}

func (r *Registry) readNodes(ctx context.Context) error {
	rows, err := r.db.QueryContext(ctx, `SELECT id, url, last_seen FROM nodes`)
	if err != nil {
		return fmt.Errorf("placement: read nodes: %w", err)
	}
	defer rows.Close()
	m := map[string]Node{}
	for rows.Next() {
		var n Node
		var seen string
		if err := rows.Scan(&n.ID, &n.URL, &seen); err != nil {
			return fmt.Errorf("placement: read nodes: %w", err)
		}
		n.LastSeen = store.ParseTime(seen)
		m[n.ID] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("placement: read nodes: %w", err)
	}
	r.mu.Lock()
	r.nodes, r.nodesAt = m, r.clk.Now()
	r.mu.Unlock()
	return nil
}

// Assign records, through q (the transaction that creates the resource),
// that this node owns the resource.
func (r *Registry) Assign(ctx context.Context, q store.Querier, kind, id string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO placements(kind, resource_id, node_id, created_at) VALUES (?,?,?,?)`,
		kind, id, r.cfg.NodeID, store.FormatTime(r.clk.Now()))
	if err != nil {
		return fmt.Errorf("placement: assign %s %s: %w", kind, id, err)
	}
	return nil
}

// Claim makes this node the owner of a resource that has none yet (one
// created before the node had an identity, whose file is here) and
// returns the owner's id: this node's, or the one that had it already.
func (r *Registry) Claim(ctx context.Context, q store.Querier, kind, id string) (string, error) {
	_, err := q.ExecContext(ctx, `INSERT INTO placements(kind, resource_id, node_id, created_at) VALUES (?,?,?,?)
		ON CONFLICT (kind, resource_id) DO NOTHING`, kind, id, r.cfg.NodeID, store.FormatTime(r.clk.Now()))
	if err != nil {
		return "", fmt.Errorf("placement: claim %s %s: %w", kind, id, err)
	}
	var owner string
	if err := q.QueryRowContext(ctx, `SELECT node_id FROM placements WHERE kind = ? AND resource_id = ?`, kind, id).Scan(&owner); err != nil {
		return "", fmt.Errorf("placement: claim %s %s: %w", kind, id, err)
	}
	return owner, nil
}

// OwnerID returns the id of the node that owns the resource, or
// ErrUnplaced.
func (r *Registry) OwnerID(ctx context.Context, kind, id string) (string, error) {
	key := kind + "/" + id
	r.mu.Lock()
	owner, ok := r.owners[key]
	r.mu.Unlock()
	if ok {
		return owner, nil
	}
	err := r.db.QueryRowContext(ctx, `SELECT node_id FROM placements WHERE kind = ? AND resource_id = ?`, kind, id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("placement: %s %s: %w", kind, id, ErrUnplaced)
	}
	if err != nil {
		return "", fmt.Errorf("placement: owner of %s %s: %w", kind, id, err)
	}
	// Placements change only by a move (not built yet), so a copy stays
	// exact; Forget drops one.
	r.mu.Lock()
	if len(r.owners) >= maxCachedOwners {
		r.owners = map[string]string{}
	}
	r.owners[key] = owner
	r.mu.Unlock()
	return owner, nil
}

// Forget drops the copy of a resource's owner (after a move).
func (r *Registry) Forget(kind, id string) {
	r.mu.Lock()
	delete(r.owners, kind+"/"+id)
	r.mu.Unlock()
}

// Owner returns the node that owns the resource: this node (Self), or
// another with its address and whether its heartbeat is stale. A stale
// owner is read again (at most once a second) before it is reported
// stale.
func (r *Registry) Owner(ctx context.Context, kind, id string) (Owner, error) {
	ownerID, err := r.OwnerID(ctx, kind, id)
	if err != nil {
		return Owner{}, err
	}
	if ownerID == r.cfg.NodeID {
		return Owner{Node: r.Self(), Self: true}, nil
	}
	now := r.clk.Now()
	n, ok, age := r.cachedNode(ownerID, now)
	// Read the nodes again when the copy is older than a heartbeat, or
	// when it says the owner is down and is older than staleReread (a
	// burst of requests for a dead owner's resources costs one read a
	// second, not one each).
	if !ok || age < 0 || age >= r.cfg.HeartbeatEvery || (now.Sub(n.LastSeen) >= r.cfg.StaleAfter && age >= staleReread) {
		if err := r.readNodes(ctx); err != nil {
			return Owner{}, err
		}
		n, ok, _ = r.cachedNode(ownerID, now)
	}
	if !ok {
		return Owner{Node: Node{ID: ownerID}}, fmt.Errorf("placement: %s %s on %s: %w", kind, id, ownerID, ErrUnknownNode)
	}
	return Owner{Node: n, Stale: now.Sub(n.LastSeen) >= r.cfg.StaleAfter}, nil
}

// cachedNode returns the node as last read, and the age of that read.
func (r *Registry) cachedNode(id string, now time.Time) (Node, bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[id]
	return n, ok, now.Sub(r.nodesAt)
}

// Owned lists the resources of a kind this node owns.
func (r *Registry) Owned(ctx context.Context, kind string) ([]string, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT resource_id FROM placements WHERE kind = ? AND node_id = ? ORDER BY resource_id`, kind, r.cfg.NodeID)
	if err != nil {
		return nil, fmt.Errorf("placement: owned: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("placement: owned: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
