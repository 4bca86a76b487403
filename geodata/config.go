package geodata

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// DefaultReloadDelay is how long the watcher waits after the last change
// event of a file before reading it, so that a file written in several steps
// is read once, complete.
const DefaultReloadDelay = time.Second

// DefaultPollInterval is how often the files are checked for changes (by
// modification time, size and identity) besides the change events, which
// some file systems (network mounts, some containers) do not deliver.
const DefaultPollInterval = time.Minute

// Config says which files a DB reads and how it follows their changes. The
// zero value is valid: a DB with no files answers XX for every address.
type Config struct {
	// CountryDB is the path of the country database, an MMDB file in the
	// GeoIP2/GeoLite2 Country (or City) layout or the flat country_code
	// layout of ip-location-db. Empty means none.
	CountryDB string `json:"countryDB,omitempty"`

	// AnonymousDB is the path of a GeoIP2 Anonymous-IP database (MMDB).
	// Its anonymizing networks are T1. Empty means none.
	AnonymousDB string `json:"anonymousDB,omitempty"`

	// AnonymizerList is the path of the operator's list of anonymizing
	// networks: one CIDR or address a line, # comments. Listed addresses
	// are T1. Empty means none.
	AnonymizerList string `json:"anonymizerList,omitempty"`

	// Overrides is the path of the operator's overrides file: "CIDR COUNTRY"
	// lines, # comments. An override wins over every database. Empty means
	// none.
	Overrides string `json:"overrides,omitempty"`

	// HostingIsAnonymous makes networks that the Anonymous-IP database flags
	// only as hosting providers T1. Off by default: cloud addresses also
	// carry corporate proxies, CI runners and monitoring.
	HostingIsAnonymous bool `json:"hostingIsAnonymous,omitempty"`

	// AllowMissing lets Open succeed when a configured file does not exist
	// yet: it logs a warning, the source stays empty (so without a country
	// database every address is XX), and the file is loaded as soon as it
	// appears. A file that exists but is broken is still an error.
	AllowMissing bool `json:"allowMissing,omitempty"`

	// NoReload turns off change detection: the files are read once by Open
	// and then only by Reload.
	NoReload bool `json:"noReload,omitempty"`

	// ReloadDelay is the wait after the last change event of a file before
	// it is read. Zero means DefaultReloadDelay.
	ReloadDelay time.Duration `json:"reloadDelay,omitempty"`

	// PollInterval is how often the files are checked besides change
	// events. Zero means DefaultPollInterval.
	PollInterval time.Duration `json:"pollInterval,omitempty"`
}

// Provision fills in the defaults and cleans the paths.
func (c *Config) Provision() {
	for _, p := range []*string{&c.CountryDB, &c.AnonymousDB, &c.AnonymizerList, &c.Overrides} {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
	if c.ReloadDelay == 0 {
		c.ReloadDelay = DefaultReloadDelay
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
}

// Validate reports a configuration that cannot work. It does not touch the
// file system.
func (c Config) Validate() error {
	var errs []error
	if c.ReloadDelay < 0 {
		errs = append(errs, fmt.Errorf("reloadDelay %v is negative", c.ReloadDelay))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("pollInterval %v is negative", c.PollInterval))
	}
	seen := make(map[string]string)
	for _, s := range c.sources() {
		if prev, ok := seen[s.path]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are the same file %s", prev, s.kind, s.path))
		}
		seen[s.path] = s.kind.String()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("geodata: config: %w", err)
	}
	return nil
}

// sources lists the configured files in the order of precedence.
func (c Config) sources() []*file {
	var out []*file
	for k, path := range [numKinds]string{c.Overrides, c.AnonymizerList, c.AnonymousDB, c.CountryDB} {
		if path != "" {
			out = append(out, &file{kind: kind(k), path: path})
		}
	}
	return out
}
