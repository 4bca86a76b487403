package geodata

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrClosed is returned by Reload after Close.
var ErrClosed = errors.New("geodata: closed")

// DB locates addresses with the configured files. Each file is read into an
// in-memory table; a lookup consults, in this order:
//
//  1. the overrides file: an override wins over everything;
//  2. the anonymizer list: a listed address is T1;
//  3. private, loopback, link-local, multicast and unspecified addresses
//     are XX, whatever a database says;
//  4. the Anonymous-IP database: an anonymizing network is T1, whatever
//     its country (as Cloudflare's T1 replaces the country);
//  5. the country database;
//  6. otherwise XX.
//
// So overrides > T1 > country > XX. DB implements Locator; its methods are
// safe for concurrent use, and Country allocates nothing. A nil *DB answers
// XX.
type DB struct {
	cfg    Config
	logger *slog.Logger
	snap   atomic.Pointer[snapshot]

	mu     sync.Mutex // serializes loads; guards files and closed
	files  []*file
	closed bool

	watcher   *fsnotify.Watcher // nil without change events
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ Locator = (*DB)(nil)

// snapshot is one immutable state of all sources; a reload builds a new one
// and swaps it in. A nil table is an empty source.
type snapshot struct {
	overrides   *rangeTable
	anonymizers *rangeTable
	anonymous   *rangeTable
	country     *rangeTable
	sources     [numKinds]Source
}

// kind is one of the four sources, in the order of precedence.
type kind int

const (
	kindOverrides kind = iota
	kindAnonymizers
	kindAnonymous
	kindCountry
	numKinds
)

var kindNames = [numKinds]string{"overrides", "anonymizer list", "anonymous database", "country database"}

func (k kind) String() string { return kindNames[k] }

// file is the change-detection state of one configured file, guarded by
// DB.mu.
type file struct {
	kind kind
	path string
	stat fs.FileInfo // as last seen; nil when missing
	sum  [32]byte    // SHA-256 of the content last loaded or refused
	seen bool        // sum is set
	err  error       // why the content of sum was refused; nil if in use
}

// Source describes one configured file and what is loaded from it.
type Source struct {
	// Kind is "overrides", "anonymizer list", "anonymous database" or
	// "country database".
	Kind string `json:"kind"`
	// Path is the configured path.
	Path string `json:"path"`
	// Loaded is false while a missing file is awaited (Config.AllowMissing).
	Loaded bool `json:"loaded"`
	// LoadedAt is when the data in use was read.
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// ModTime is the modification time of the file the data came from.
	ModTime time.Time `json:"modTime,omitzero"`
	// SHA256 is the hex digest of that file.
	SHA256 string `json:"sha256,omitempty"`
	// DatabaseType is the database_type of an MMDB's metadata.
	DatabaseType string `json:"databaseType,omitempty"`
	// BuildTime is the build_epoch of an MMDB's metadata.
	BuildTime time.Time `json:"buildTime,omitzero"`
	// Networks counts the networks in use: with a country, anonymizing,
	// listed or overridden.
	Networks int `json:"networks"`
}

// Open reads the configured files and, unless cfg.NoReload, starts following
// their changes; see DB for the lookup order and Config for the files. A
// missing file is an error wrapping fs.ErrNotExist that names the path,
// unless cfg.AllowMissing; a broken file is an error wrapping ErrInvalid. A
// nil logger means slog.Default(). Close the DB to stop following changes.
//
// To start without a country database that has not been fetched yet, set
// AllowMissing: every address is then XX (with a warning in the log) until
// the file appears, and it is loaded then.
func Open(cfg Config, logger *slog.Logger) (*DB, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db := &DB{cfg: cfg, logger: logger, files: cfg.sources()}
	s := &snapshot{}
	for _, f := range db.files {
		s.sources[f.kind] = Source{Kind: f.kind.String(), Path: f.path}
	}
	db.snap.Store(s)
	for _, f := range db.files {
		err := db.load(f, true)
		if errors.Is(err, fs.ErrNotExist) && cfg.AllowMissing {
			logger.Warn("geodata: file not found; loading it when it appears", "kind", f.kind.String(), "path", f.path)
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	if !cfg.NoReload {
		db.startWatching()
	}
	return db, nil
}

// Country returns the country of addr; see DB for the order of the sources.
// An IPv4-mapped IPv6 address is looked up as IPv4; a zone is ignored; an
// invalid address is XX.
func (db *DB) Country(addr netip.Addr) Country {
	if db == nil {
		return Unknown
	}
	return db.snap.Load().lookup(addr)
}

func (s *snapshot) lookup(addr netip.Addr) Country {
	if !addr.IsValid() {
		return Unknown
	}
	addr = addr.Unmap()
	k := keyOf(addr)
	if s.overrides != nil {
		if c := s.overrides.find(k); c != noCountry {
			return c
		}
	}
	if s.anonymizers != nil && s.anonymizers.find(k) != noCountry {
		return Anonymous
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return Unknown
	}
	if s.anonymous != nil && s.anonymous.find(k) != noCountry {
		return Anonymous
	}
	if s.country != nil {
		if c := s.country.find(k); c != noCountry {
			return c
		}
	}
	return Unknown
}

// Sources describes the configured files and the data in use, in the order
// of precedence.
func (db *DB) Sources() []Source {
	s := db.snap.Load()
	var out []Source
	for _, src := range s.sources {
		if src.Path != "" {
			out = append(out, src)
		}
	}
	return out
}

// Reload reads every configured file whose content changed now, as the
// watcher would. A broken file is refused, logged and reported in the error,
// and its previous data stays; a missing file keeps its previous data too.
func (db *DB) Reload() error {
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return ErrClosed
	}
	var errs []error
	for _, f := range db.files {
		if err := db.load(f, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops following changes. The data stays usable: Country keeps
// answering with the last data loaded.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.mu.Lock()
		db.closed = true
		db.mu.Unlock()
		if db.stop != nil {
			close(db.stop)
			<-db.done
		}
	})
	return nil
}

// load reads f if it changed since last seen (always if force), builds its
// table and swaps it in. A missing file keeps the previous data and returns
// an error wrapping fs.ErrNotExist; a broken one is logged, keeps the
// previous data and returns an error wrapping ErrInvalid.
func (db *DB) load(f *file, force bool) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	scope := func(err error) error { return fmt.Errorf("geodata: %s %s: %w", f.kind, f.path, err) }

	fi, err := os.Stat(f.path)
	if err != nil {
		if f.stat != nil {
			db.logger.Warn("geodata: file gone; keeping the data loaded", "kind", f.kind.String(), "path", f.path, "err", err)
		}
		f.stat = nil
		return scope(err)
	}
	if !force && f.stat != nil && sameFile(f.stat, fi) {
		return nil
	}
	f.stat = fi
	data, err := os.ReadFile(f.path)
	if err != nil {
		db.logger.Error("geodata: cannot read file; keeping the data loaded", "kind", f.kind.String(), "path", f.path, "err", err)
		return scope(err)
	}
	sum := sha256.Sum256(data)
	if f.seen && sum == f.sum {
		return f.err // the content in use, or the same broken content, refused and logged once
	}
	f.sum, f.seen, f.err = sum, true, nil

	start := time.Now()
	next := *db.snap.Load()
	src := Source{Kind: f.kind.String(), Path: f.path, Loaded: true, LoadedAt: start,
		ModTime: fi.ModTime(), SHA256: fmt.Sprintf("%x", sum)}
	var info mmdbInfo
	switch f.kind {
	case kindOverrides:
		var t *rangeTable
		t, src.Networks, err = buildOverrides(data)
		next.overrides = t
	case kindAnonymizers:
		var t *rangeTable
		t, src.Networks, err = buildPrefixList(data)
		next.anonymizers = t
	case kindAnonymous:
		var t *rangeTable
		t, info, err = loadAnonymousDB(data, db.cfg.HostingIsAnonymous)
		next.anonymous = t
	case kindCountry:
		var t *rangeTable
		t, info, err = loadCountryDB(data)
		next.country = t
	}
	if err != nil {
		db.logger.Error("geodata: refused new file; keeping the data loaded", "kind", f.kind.String(), "path", f.path, "err", err)
		f.err = scope(err)
		return f.err
	}
	if f.kind == kindAnonymous || f.kind == kindCountry {
		src.DatabaseType, src.BuildTime, src.Networks = info.dbType, info.buildTime, info.networks
	}
	next.sources[f.kind] = src
	db.snap.Store(&next)
	db.logger.Info("geodata: loaded", "kind", f.kind.String(), "path", f.path,
		"networks", src.Networks, "took", time.Since(start).Round(time.Millisecond))
	if len(info.ignored) > 0 {
		db.logger.Warn("geodata: codes that are not ISO 3166-1 alpha-2 are read as XX", "path", f.path, "codes", info.ignored)
	}
	return nil
}

// sameFile reports whether a and b look like the same unchanged file.
func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func buildOverrides(data []byte) (*rangeTable, int, error) {
	list, err := ParseOverrides(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var b rangeBuilder
	for _, o := range list {
		b.insert(o.Prefix, o.Country)
	}
	return b.build(), len(list), nil
}

// buildPrefixList builds the set of networks of an anonymizer list: a table
// in which every listed network is Anonymous.
func buildPrefixList(data []byte) (*rangeTable, int, error) {
	list, err := ParsePrefixList(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var b rangeBuilder
	for _, p := range list {
		b.insert(p, Anonymous)
	}
	t := b.build()
	return t, t.prefixes, nil
}
