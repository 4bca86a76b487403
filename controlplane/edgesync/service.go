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
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
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

// Sources load what a snapshot holds and what count ingestion needs; the
// areas that own the data provide them, so this package reads no other
// area's tables. Each reads through q: a snapshot is read outside any
// transaction and is consistent because the version is read before and
// after building it; counts are ingested inside the batch's transaction.
type Sources struct {
	// Sites returns every project with a serving deployment (the deploys
	// area): ProjectID, WorkspaceID and Deployment. Slug and Host are filled
	// by the service from Projects.
	Sites func(ctx context.Context, q store.Querier) ([]snapshot.Site, error)
	// Projects returns every project's workspace and slug by id (the
	// projects area).
	Projects func(ctx context.Context, q store.Querier) (map[string]ProjectRef, error)
	// Project returns one project's workspace and slug; ok is false when it
	// does not exist.
	Project func(ctx context.Context, q store.Querier, id string) (ref ProjectRef, ok bool, err error)
	// ServingKind returns the kind of a project's serving deployment ("" when
	// nothing serves).
	ServingKind func(ctx context.Context, q store.Querier, projectID string) (string, error)
	// Served reports whether a deployment serves the blob with this SHA-256.
	Served func(ctx context.Context, q store.Querier, sha256 string) (bool, error)
	// Workspaces returns the id of every workspace (the accounts area).
	Workspaces func(ctx context.Context, q store.Querier) ([]string, error)
	// Shield returns the saved Shield settings of every workspace that
	// saved some (others have rules.DefaultSettings).
	Shield func(ctx context.Context, q store.Querier) (map[string]rules.Settings, error)
	// Passwords returns the site-password hash of every protected project.
	Passwords func(ctx context.Context, q store.Querier) (map[string]string, error)
	// CDN returns the saved CDN setting of every workspace that saved one
	// (others have DefaultCDN).
	CDN func(ctx context.Context, q store.Querier) (map[string]snapshot.CDN, error)
	// Domains returns the custom domains edges serve (the domains area):
	// Host, ProjectID and RedirectTo. Optional: nil publishes none.
	Domains func(ctx context.Context, q store.Querier) ([]snapshot.Domain, error)
	// PublicBuckets returns the id of every public storage bucket (the
	// buckets area), published with the storage host (SetStorage).
	// Optional: nil publishes none.
	PublicBuckets func(ctx context.Context, q store.Querier) ([]string, error)
}

// ProjectRef is what snapshots and counts need of a project.
type ProjectRef struct {
	Workspace string
	Slug      string
}

// validate reports the first source that is missing.
func (src Sources) validate() error {
	for name, missing := range map[string]bool{
		"Sites": src.Sites == nil, "Projects": src.Projects == nil, "Project": src.Project == nil,
		"ServingKind": src.ServingKind == nil, "Served": src.Served == nil, "Workspaces": src.Workspaces == nil,
		"Shield": src.Shield == nil, "Passwords": src.Passwords == nil, "CDN": src.CDN == nil,
	} {
		if missing {
			return fmt.Errorf("edgesync: source %s is missing", name)
		}
	}
	return nil
}

// DefaultCDN is the CDN setting of a workspace that saved none.
var DefaultCDN = snapshot.CDN{Enabled: true, CacheTTLSeconds: 3600}

// Service publishes snapshots and ingests counts.
type Service struct {
	db         *store.DB
	blobs      blobs.Backend
	clock      clock.Clock
	log        *slog.Logger
	appsDomain string
	sealer     *seal.Sealer
	src        Sources

	version     atomic.Int64
	mu          sync.Mutex
	changed     chan struct{}   // closed and replaced on every bump
	waiters     int             // long-polls waiting now
	waitSignals []chan struct{} // closed when a long-poll starts waiting

	buildMu sync.Mutex
	cache   atomic.Pointer[built]

	sessionKey []byte
	tokens     tokenCache

	// media is the playback host published in every snapshot (SetMedia).
	media atomic.Pointer[snapshot.Media]
	// storage is the storage host published in every snapshot
	// (SetStorage), without its bucket list (read at each build).
	storage atomic.Pointer[snapshot.Storage]
}

// built is a rendered snapshot.
type built struct {
	version int64
	json    []byte
	gzip    []byte
}

// Config is the service's configuration.
type Config struct {
	// AppsDomain is the domain projects answer under: a site's host is
	// <slug>.<AppsDomain>.
	AppsDomain string `json:"appsDomain"`
}

// Deps are what the service is built on.
type Deps struct {
	// DB holds the version, the session key and edge tokens.
	DB *store.DB
	// Blobs is where deployed files are read from for edges (nil: edges
	// cannot fetch files through the API).
	Blobs blobs.Backend
	// Sealer seals the session signing key at rest.
	Sealer *seal.Sealer
	// Clock dates tokens and counts (clock.System when nil).
	Clock clock.Clock
	// Logger receives what goes wrong in the background (slog.Default
	// when nil).
	Logger *slog.Logger
	// Sources read what snapshots hold, each from the area owning it.
	Sources Sources
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Sealer": d.Sealer != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return d.Sources.validate()
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("edgesync: missing dependencies")

// New returns the service. It reads the store (hence ctx): the snapshot
// version, the edge tokens and the session signing key, which it creates
// on first start (replicas starting together agree on one). It starts
// nothing: Run follows the versions other replicas commit.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	db, sealer := d.DB, d.Sealer
	s := &Service{db: db, blobs: d.Blobs, clock: d.Clock, log: d.Logger, appsDomain: strings.ToLower(cfg.AppsDomain), sealer: sealer,
		src: d.Sources, changed: make(chan struct{})}
	var v int64
	var sealed []byte
	if err := db.QueryRowContext(ctx, `SELECT version, session_key FROM edge_config WHERE id = 1`).Scan(&v, &sealed); err != nil {
		return nil, fmt.Errorf("edgesync: load: %w", err)
	}
	s.version.Store(v)
	if sealed == nil {
		// Replicas starting together: the first key stored wins, the others
		// read it back.
		key := make([]byte, 32)
		rand.Read(key)
		if _, err := db.ExecContext(ctx, `UPDATE edge_config SET session_key = ? WHERE id = 1 AND session_key IS NULL`, sealer.Seal(key, sessionKeyAAD)); err != nil {
			return nil, fmt.Errorf("edgesync: session key: %w", err)
		}
		if err := db.QueryRowContext(ctx, `SELECT session_key FROM edge_config WHERE id = 1`).Scan(&sealed); err != nil {
			return nil, fmt.Errorf("edgesync: session key: %w", err)
		}
	}
	key, err := sealer.Open(sealed, sessionKeyAAD)
	if err != nil {
		return nil, fmt.Errorf("edgesync: session key: %w", err)
	}
	s.sessionKey = key
	if err := s.tokens.load(ctx, db, d.Clock.Now()); err != nil {
		return nil, err
	}
	return s, nil
}

// Run wakes this replica's long-polls on the versions other replicas
// commit (their commits notify every replica), until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	ch, err := s.db.Notifier().Listen(ctx, VersionChannel)
	if err != nil {
		return fmt.Errorf("edgesync: %w", err)
	}
	// A version committed elsewhere before the subscription.
	s.catchUp(ctx)
	s.follow(ch)
	return nil
}

// VersionChannel is the store notification channel on which a committed
// version bump is announced (payload: the version in decimal), so the
// long-polls of every control-plane replica wake.
const VersionChannel = "edgesync_version"

// follow wakes this replica's long-polls on the versions other replicas
// commit, until ch closes. After a lost listening connection (payload
// store.Reconnected) it re-reads the version.
func (s *Service) follow(ch <-chan string) {
	for p := range ch {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			s.catchUp(context.Background())
			continue
		}
		if v > s.version.Load() {
			s.published(v)
		}
	}
}

// catchUp reads the stored version and wakes the long-polls when another
// replica moved it.
func (s *Service) catchUp(ctx context.Context) {
	v, err := s.dbVersion(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("edgesync: version after a notification", "err", err)
		}
		return
	}
	if v > s.version.Load() {
		s.published(v)
	}
}

var sessionKeyAAD = []byte("edgesync session key")

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
		return s.bump(ctx, tx, &v)
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
	if err := s.db.Tx(ctx, func(tx *sql.Tx) error { return s.bump(ctx, tx, &v) }); err != nil {
		return 0, err
	}
	s.published(v)
	return v, nil
}

// bump increments the version in tx and announces it on VersionChannel at
// commit.
func (s *Service) bump(ctx context.Context, tx *sql.Tx, v *int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE edge_config SET version = version + 1, updated_at = ? WHERE id = 1`, store.FormatTime(s.clock.Now())); err != nil {
		return fmt.Errorf("edgesync: bump: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT version FROM edge_config WHERE id = 1`).Scan(v); err != nil {
		return fmt.Errorf("edgesync: bump: %w", err)
	}
	if err := s.db.Notifier().Notify(ctx, tx, VersionChannel, strconv.FormatInt(*v, 10)); err != nil {
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
		if s.version.Load() != after {
			s.mu.Unlock()
			b, err := s.current(ctx)
			return b, err == nil, err
		}
		s.waiters++
		for _, c := range s.waitSignals {
			close(c)
		}
		s.waitSignals = nil
		s.mu.Unlock()
		var woken bool
		select {
		case <-ch:
			woken = true
		case <-timer.C:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
		if !woken {
			return nil, false, nil
		}
	}
}

// Waiting returns a channel closed as soon as at least one long-poll is
// waiting for a change (at once when one is): a signal for tests and
// in-process callers that a change made after it wakes a poll.
func (s *Service) Waiting() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	if s.waiters > 0 {
		close(c)
		return c
	}
	s.waitSignals = append(s.waitSignals, c)
	return c
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
	refs, err := s.src.Projects(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: projects: %w", err)
	}
	sites, err := s.src.Sites(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: sites: %w", err)
	}
	pw, err := s.src.Passwords(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: passwords: %w", err)
	}
	for _, st := range sites {
		ref, ok := refs[st.ProjectID]
		if !ok {
			continue // deleted meanwhile: the version check rebuilds
		}
		st.Slug, st.WorkspaceID = ref.Slug, ref.Workspace
		st.Host = strings.ToLower(st.Label+st.Slug) + "." + s.appsDomain
		if h, ok := pw[st.ProjectID]; ok {
			st.Password = &snapshot.Password{Hash: h, Version: rules.PasswordVersion(h)}
		}
		snap.Sites = append(snap.Sites, st)
	}
	slices.SortFunc(snap.Sites, func(a, b snapshot.Site) int { return strings.Compare(a.Host, b.Host) })
	if err := s.addDomains(ctx, &snap); err != nil {
		return snap, err
	}
	if m := s.media.Load(); m != nil {
		mc := *m
		snap.Media = &mc
	}
	if err := s.addStorage(ctx, &snap); err != nil {
		return snap, err
	}

	shield, err := s.src.Shield(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: shield: %w", err)
	}
	cdn, err := s.src.CDN(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: cdn: %w", err)
	}
	ids, err := s.src.Workspaces(ctx, s.db)
	if err != nil {
		return snap, fmt.Errorf("edgesync: workspaces: %w", err)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := snapshot.Workspace{ID: id, Shield: rules.DefaultSettings(), CDN: DefaultCDN}
		if st, ok := shield[id]; ok {
			w.Shield = st
		}
		if c, ok := cdn[id]; ok {
			w.CDN = c
		}
		snap.Workspaces = append(snap.Workspaces, w)
	}
	return snap, nil
}

// addDomains lists the custom domains of projects that have a site in
// snap, sorted by host; a domain naming a site's own host (under the apps
// domain) is left out: the site answers there.
func (s *Service) addDomains(ctx context.Context, snap *snapshot.Snapshot) error {
	if s.src.Domains == nil {
		return nil
	}
	ds, err := s.src.Domains(ctx, s.db)
	if err != nil {
		return fmt.Errorf("edgesync: domains: %w", err)
	}
	serving := make(map[string]bool, len(snap.Sites))
	hosts := make(map[string]bool, len(snap.Sites))
	for _, st := range snap.Sites {
		if st.Label == "" { // a deployment's own address does not take a domain
			serving[st.ProjectID] = true
		}
		hosts[st.Host] = true
	}
	for _, d := range ds {
		d.Host = strings.ToLower(strings.TrimSuffix(d.Host, "."))
		d.RedirectTo = strings.ToLower(strings.TrimSuffix(d.RedirectTo, "."))
		if !serving[d.ProjectID] || hosts[d.Host] || d.Host == "" {
			continue
		}
		hosts[d.Host] = true
		snap.Domains = append(snap.Domains, d)
	}
	slices.SortFunc(snap.Domains, func(a, b snapshot.Domain) int { return strings.Compare(a.Host, b.Host) })
	return nil
}

// ErrInvalidMedia is wrapped by the errors of SetMedia.
var ErrInvalidMedia = errors.New("edgesync: invalid media playback host")

// SetMedia publishes the media playback host (snapshot.Media) in every
// snapshot from now on, or withdraws it with a zero m. It is configuration
// of this process, not stored: it bumps the version, so edges that kept a
// snapshot of an earlier start (with another host, or none) see it.
func (s *Service) SetMedia(ctx context.Context, m snapshot.Media) error {
	m.Host = strings.ToLower(strings.TrimSuffix(m.Host, "."))
	m.Origin = strings.TrimRight(m.Origin, "/")
	if m == (snapshot.Media{}) {
		if s.media.Swap(nil) == nil {
			return nil
		}
		_, err := s.Bump(ctx)
		return err
	}
	if err := checkHost(m.Host, m.Origin); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMedia, err)
	}
	old := s.media.Swap(&m)
	if old != nil && *old == m {
		return nil
	}
	if _, err := s.Bump(ctx); err != nil {
		s.media.Store(old) // edges were not told: a retry bumps again
		return err
	}
	return nil
}

// checkHost checks a platform host published in snapshots (the playback
// host, the storage host) and the control-plane origin it forwards to.
func checkHost(host, origin string) error {
	if host == "" || len(host) > 253 || strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		return fmt.Errorf("host %q must be a host name without a port", host)
	}
	if u, err := url.Parse(origin); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("origin %q must be an http(s) base URL", origin)
	}
	return nil
}

// ErrInvalidStorage is wrapped by the errors of SetStorage.
var ErrInvalidStorage = errors.New("edgesync: invalid storage host")

// SetStorage publishes the storage host (snapshot.Storage) in every
// snapshot from now on: edges answer host's /storage paths, forwarding
// to origin (the control plane's base URL). Empty host and origin
// withdraw it. The public bucket list is read from Sources.PublicBuckets
// at every build, and the buckets area publishes its changes through
// Change. Like SetMedia it is configuration of this process, not stored:
// it bumps the version when it changes what edges see.
func (s *Service) SetStorage(ctx context.Context, host, origin string) error {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	origin = strings.TrimRight(origin, "/")
	if host == "" && origin == "" {
		if s.storage.Swap(nil) == nil {
			return nil
		}
		_, err := s.Bump(ctx)
		return err
	}
	if err := checkHost(host, origin); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidStorage, err)
	}
	st := &snapshot.Storage{Host: host, Origin: origin}
	old := s.storage.Swap(st)
	if old != nil && old.Host == host && old.Origin == origin {
		return nil
	}
	if _, err := s.Bump(ctx); err != nil {
		s.storage.Store(old) // edges were not told: a retry bumps again
		return err
	}
	return nil
}

// addStorage adds the storage host, when one is set, with the public
// buckets read now.
func (s *Service) addStorage(ctx context.Context, snap *snapshot.Snapshot) error {
	st := s.storage.Load()
	if st == nil {
		return nil
	}
	ids := []string{}
	if s.src.PublicBuckets != nil {
		var err error
		if ids, err = s.src.PublicBuckets(ctx, s.db); err != nil {
			return fmt.Errorf("edgesync: public buckets: %w", err)
		}
		ids = slices.Clone(ids)
		slices.Sort(ids)
		ids = slices.Compact(ids)
	}
	snap.Storage = &snapshot.Storage{Host: st.Host, Origin: st.Origin, PublicBuckets: ids}
	return nil
}

// Served reports whether a deployment serves the blob named sum.
func (s *Service) Served(ctx context.Context, sum string) (bool, error) {
	return s.src.Served(ctx, s.db, sum)
}
