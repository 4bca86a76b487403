// Package edgesync publishes versioned configuration snapshots to edges and
// collects what the edges counted.
//
// Every change an edge must see (a deploy or rollback going live, a Shield
// save, Apply now, a site password, a CDN save, a project delete) runs
// through Service.Change, which bumps the snapshot version in the same
// transaction as the change and wakes every waiting long-poll after commit.
// Edges call GET /edge/v1/config?after=<version> with an edge token; the
// answer is the whole snapshot (package snapshot) as soon as a newer version
// exists, or 304 after about 30 seconds without one. `platform serve` runs
// its in-process edge over the very same endpoint with a token from
// EnsureLocalToken.
package edgesync

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// Defaults of the long-poll.
const (
	// DefaultWait is how long a long-poll waits for a newer version.
	DefaultWait = 30 * time.Second
	// MaxWait is the longest wait a client may ask for (?wait=seconds).
	MaxWait = 60 * time.Second
)

// Sources load what a snapshot holds; the areas that own the data provide
// them. Each reads through q, outside any transaction: a snapshot is
// consistent because the version is read before and after building it.
type Sources struct {
	// Sites returns every project with a serving deployment; Host is filled
	// by the service.
	Sites func(ctx context.Context, q store.Querier) ([]snapshot.Site, error)
	// Shield returns the saved Shield settings of every workspace that
	// saved some (others have rules.DefaultSettings).
	Shield func(ctx context.Context, q store.Querier) (map[string]rules.Settings, error)
	// Passwords returns the site-password hash of every protected project.
	Passwords func(ctx context.Context, q store.Querier) (map[string]string, error)
	// CDN returns the saved CDN setting of every workspace that saved one
	// (others have DefaultCDN).
	CDN func(ctx context.Context, q store.Querier) (map[string]snapshot.CDN, error)
}

// DefaultCDN is the CDN setting of a workspace that saved none.
var DefaultCDN = snapshot.CDN{Enabled: true, CacheTTLSeconds: 3600}

// Service publishes snapshots and ingests counts.
type Service struct {
	db         *store.DB
	blobs      *blobs.Store
	clock      clock.Clock
	log        *slog.Logger
	appsDomain string
	sealer     *seal.Sealer
	src        Sources

	version atomic.Int64
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every bump

	buildMu sync.Mutex
	cache   atomic.Pointer[built]

	sessionKey []byte
	tokens     tokenCache
}

// built is a rendered snapshot.
type built struct {
	version int64
	json    []byte
	gzip    []byte
}

// New returns the service, loading the version and creating the session
// signing key on first start.
func New(ctx context.Context, db *store.DB, bs *blobs.Store, sealer *seal.Sealer, clk clock.Clock, log *slog.Logger, appsDomain string) (*Service, error) {
	s := &Service{db: db, blobs: bs, clock: clk, log: log, appsDomain: strings.ToLower(appsDomain), sealer: sealer, changed: make(chan struct{})}
	var v int64
	var sealed []byte
	if err := db.QueryRowContext(ctx, `SELECT version, session_key FROM edge_config WHERE id = 1`).Scan(&v, &sealed); err != nil {
		return nil, fmt.Errorf("edgesync: load: %w", err)
	}
	s.version.Store(v)
	if sealed == nil {
		key := make([]byte, 32)
		rand.Read(key)
		if _, err := db.ExecContext(ctx, `UPDATE edge_config SET session_key = ? WHERE id = 1`, sealer.Seal(key, sessionKeyAAD)); err != nil {
			return nil, fmt.Errorf("edgesync: session key: %w", err)
		}
		s.sessionKey = key
	} else {
		key, err := sealer.Open(sealed, sessionKeyAAD)
		if err != nil {
			return nil, fmt.Errorf("edgesync: session key: %w", err)
		}
		s.sessionKey = key
	}
	if err := s.tokens.load(ctx, db); err != nil {
		return nil, err
	}
	return s, nil
}

var sessionKeyAAD = []byte("edgesync session key")

// SetSources installs what snapshots are built from.
func (s *Service) SetSources(src Sources) { s.src = src }

// Version returns the current snapshot version.
func (s *Service) Version() int64 { return s.version.Load() }

// Change runs fn in a transaction and bumps the snapshot version in the same
// transaction, so edges see the change in the next snapshot; waiting
// long-polls wake after commit.
func (s *Service) Change(ctx context.Context, fn func(tx *sql.Tx) error) error {
	var v int64
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return bump(ctx, tx, s.clock.Now(), &v)
	})
	if err != nil {
		return err
	}
	s.published(v)
	return nil
}

// Bump publishes a new version without another change (Apply now).
func (s *Service) Bump(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Tx(ctx, func(tx *sql.Tx) error { return bump(ctx, tx, s.clock.Now(), &v) }); err != nil {
		return 0, err
	}
	s.published(v)
	return v, nil
}

func bump(ctx context.Context, tx *sql.Tx, now time.Time, v *int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE edge_config SET version = version + 1, updated_at = ? WHERE id = 1`, store.FormatTime(now)); err != nil {
		return fmt.Errorf("edgesync: bump: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT version FROM edge_config WHERE id = 1`).Scan(v); err != nil {
		return fmt.Errorf("edgesync: bump: %w", err)
	}
	return nil
}

// published records version v and wakes the waiters.
func (s *Service) published(v int64) {
	s.mu.Lock()
	if v > s.version.Load() {
		s.version.Store(v)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Await returns the snapshot as soon as its version differs from after
// (newer, or from another data directory when after is larger), waiting up
// to wait. It returns ok false when nothing changed in time or ctx ended.
func (s *Service) Await(ctx context.Context, after int64, wait time.Duration) (*built, bool, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if s.version.Load() != after {
			b, err := s.current(ctx)
			return b, err == nil, err
		}
		select {
		case <-ch:
		case <-timer.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, nil
		}
	}
}

// Snapshot returns the current snapshot.
func (s *Service) Snapshot(ctx context.Context) (snapshot.Snapshot, error) {
	b, err := s.current(ctx)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	var snap snapshot.Snapshot
	err = json.Unmarshal(b.json, &snap)
	return snap, err
}

// current returns the rendered snapshot of the current version, building
// it once per version.
func (s *Service) current(ctx context.Context) (*built, error) {
	if b := s.cache.Load(); b != nil && b.version == s.version.Load() {
		return b, nil
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if b := s.cache.Load(); b != nil && b.version == s.version.Load() {
		return b, nil
	}
	for range 5 {
		v1, err := s.dbVersion(ctx)
		if err != nil {
			return nil, err
		}
		snap, err := s.build(ctx, v1)
		if err != nil {
			return nil, err
		}
		v2, err := s.dbVersion(ctx)
		if err != nil {
			return nil, err
		}
		if v1 != v2 {
			continue // a change committed meanwhile: build again
		}
		data, err := json.Marshal(snap)
		if err != nil {
			return nil, fmt.Errorf("edgesync: encode: %w", err)
		}
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(data)
		zw.Close()
		b := &built{version: v1, json: data, gzip: zb.Bytes()}
		s.cache.Store(b)
		if v1 > s.version.Load() {
			s.published(v1)
		}
		return b, nil
	}
	return nil, fmt.Errorf("edgesync: configuration kept changing while building a snapshot")
}

func (s *Service) dbVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.QueryRowContext(ctx, `SELECT version FROM edge_config WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("edgesync: version: %w", err)
	}
	return v, nil
}

// build reads a snapshot of version v.
func (s *Service) build(ctx context.Context, v int64) (snapshot.Snapshot, error) {
	snap := snapshot.Snapshot{Version: v, GeneratedAt: s.clock.Now(), AppsDomain: s.appsDomain, SessionKey: s.sessionKey,
		Sites: []snapshot.Site{}, Workspaces: []snapshot.Workspace{}}
	var err error
	if s.src.Sites != nil {
		if snap.Sites, err = s.src.Sites(ctx, s.db); err != nil {
			return snap, fmt.Errorf("edgesync: sites: %w", err)
		}
	}
	var pw map[string]string
	if s.src.Passwords != nil {
		if pw, err = s.src.Passwords(ctx, s.db); err != nil {
			return snap, fmt.Errorf("edgesync: passwords: %w", err)
		}
	}
	for i := range snap.Sites {
		st := &snap.Sites[i]
		st.Host = strings.ToLower(st.Slug) + "." + s.appsDomain
		if h, ok := pw[st.ProjectID]; ok {
			st.Password = &snapshot.Password{Hash: h, Version: rules.PasswordVersion(h)}
		}
	}
	slices.SortFunc(snap.Sites, func(a, b snapshot.Site) int { return strings.Compare(a.Host, b.Host) })

	shield := map[string]rules.Settings{}
	if s.src.Shield != nil {
		if shield, err = s.src.Shield(ctx, s.db); err != nil {
			return snap, fmt.Errorf("edgesync: shield: %w", err)
		}
	}
	cdn := map[string]snapshot.CDN{}
	if s.src.CDN != nil {
		if cdn, err = s.src.CDN(ctx, s.db); err != nil {
			return snap, fmt.Errorf("edgesync: cdn: %w", err)
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM workspaces ORDER BY id`)
	if err != nil {
		return snap, fmt.Errorf("edgesync: workspaces: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return snap, fmt.Errorf("edgesync: workspaces: %w", err)
		}
		w := snapshot.Workspace{ID: id, Shield: rules.DefaultSettings(), CDN: DefaultCDN}
		if st, ok := shield[id]; ok {
			w.Shield = st
		}
		if c, ok := cdn[id]; ok {
			w.CDN = c
		}
		snap.Workspaces = append(snap.Workspaces, w)
	}
	return snap, rows.Err()
}
