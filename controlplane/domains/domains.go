// Package domains is projects' custom domains: a project answers at a name
// of its owner's (shop.example.com, or an apex such as example.com with its
// www name) besides <slug>.<apps domain>, the way Vercel and Netlify do it.
//
// Adding a domain answers the DNS records to publish: a TXT record at
// _platform-challenge.<name> carrying the domain's token, which proves
// control of the name, and the records that route it to the edges (A/AAAA
// to the edges' addresses for an apex, a CNAME to <slug>.<apps domain> for
// any other name). Verification looks them up through the configured
// resolver (--dns-resolver), on request and periodically as a job. Once
// the TXT record was found the name is the project's across the whole
// installation (another workspace is refused) and the edges serve the
// project's site there, with its Shield, cache and site password, and a
// certificate through the edges' ACME or local-CA path; the routing
// records decide between verified and misconfigured.
package domains

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// Defaults of Config.
const (
	// DefaultDomainsPerProject bounds a project's custom domains.
	DefaultDomainsPerProject = 50
	// DefaultRecheckEvery is how often every domain's records are looked
	// up again.
	DefaultRecheckEvery = time.Hour
	// DefaultLookupTimeout bounds the look-ups of one domain.
	DefaultLookupTimeout = 15 * time.Second
	// ChallengeLabel is the label under a name where its TXT record goes.
	ChallengeLabel = "_platform-challenge"
	// TokenPrefix starts the value of the TXT record.
	TokenPrefix = "platform-domain-verification="
)

// Config is the area's configuration.
type Config struct {
	// AppsDomain is the domain projects answer under: a subdomain's CNAME
	// points at <slug>.<AppsDomain>. Names at or under it cannot be added.
	AppsDomain string `json:"appsDomain"`
	// DNSResolver is the DNS server (host:port) records are looked up at;
	// empty uses the system's resolver (--dns-resolver, as the mail area).
	DNSResolver string `json:"dnsResolver,omitempty"`
	// EdgeAddresses are the edges' public IPv4 and IPv6 addresses, which an
	// apex's A and AAAA records must point at. Empty: an apex must resolve
	// to the addresses <slug>.<AppsDomain> resolves to (an ALIAS, ANAME or
	// flattened CNAME at the DNS provider).
	EdgeAddresses []string `json:"edgeAddresses,omitempty"`
	// ReservedDomains may not be added, nor names under them (the API's
	// and the media host's domains); AppsDomain always is.
	ReservedDomains []string `json:"reservedDomains,omitempty"`
	// ACME tells that edges get certificates from an ACME CA: a verified
	// domain still without one a day later is reported.
	ACME bool `json:"acme,omitempty"`
	// DomainsPerProject bounds a project's domains (DefaultDomainsPerProject).
	DomainsPerProject int `json:"domainsPerProject,omitempty"`
	// RecheckEvery is how often every domain is looked up again
	// (DefaultRecheckEvery).
	RecheckEvery time.Duration `json:"recheckEvery,omitempty"`
	// LookupTimeout bounds the look-ups of one domain (DefaultLookupTimeout).
	LookupTimeout time.Duration `json:"lookupTimeout,omitempty"`
	// CertEvery is how often verified domains' certificates are checked
	// and obtained or renewed when Deps.Obtainer is set (DefaultCertEvery).
	CertEvery time.Duration `json:"certEvery,omitempty"`

	edges []netip.Addr
}

// Provision fills defaults and parses EdgeAddresses (Validate reports a
// bad one).
func (c *Config) Provision() {
	c.AppsDomain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(c.AppsDomain), "."))
	if c.DomainsPerProject <= 0 {
		c.DomainsPerProject = DefaultDomainsPerProject
	}
	if c.RecheckEvery <= 0 {
		c.RecheckEvery = DefaultRecheckEvery
	}
	if c.LookupTimeout <= 0 {
		c.LookupTimeout = DefaultLookupTimeout
	}
	if c.CertEvery <= 0 {
		c.CertEvery = DefaultCertEvery
	}
	c.edges = c.edges[:0]
	for _, a := range c.EdgeAddresses {
		if ip, err := netip.ParseAddr(strings.TrimSpace(a)); err == nil {
			c.edges = append(c.edges, ip.Unmap())
		}
	}
}

// Validate checks a provisioned Config; it changes nothing.
func (c *Config) Validate() error {
	if c.AppsDomain == "" {
		return errors.New("domains: the apps domain is required")
	}
	if c.DNSResolver != "" {
		if _, _, err := net.SplitHostPort(c.DNSResolver); err != nil {
			return fmt.Errorf("domains: DNS resolver %q must be host:port: %w", c.DNSResolver, err)
		}
	}
	for _, a := range c.EdgeAddresses {
		ip, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil || ip.IsUnspecified() || ip.Zone() != "" {
			return fmt.Errorf("domains: edge address %q must be an IPv4 or IPv6 address", a)
		}
	}
	return nil
}

// Projects is what the area needs of projects (*projects.Service).
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Publisher publishes edge configuration changes (*edgesync.Service): a
// change of the hosts edges serve runs in Change's transaction.
type Publisher interface {
	Change(ctx context.Context, fn func(tx *sql.Tx) error) error
}

// Certificates tells when the certificate the edges serve for a host
// expires (*certs.Service); found is false when none was issued.
type Certificates interface {
	Expiry(ctx context.Context, host string) (notAfter time.Time, found bool, err error)
}

// Deps are the services the area is built on.
type Deps struct {
	DB *store.DB
	// Clock is the time source (clock.System when nil).
	Clock    clock.Clock
	Jobs     jobs.Queue
	Projects Projects
	// Pub bumps the edge configuration with every change of served hosts.
	Pub Publisher
	// Certs, when set, lets the attention list report certificates that
	// were not issued or not renewed.
	Certs Certificates
	// Obtainer, when set (the control plane has an ACME CA), obtains
	// verified domains' certificates ahead of their first visitor and
	// renews them within CertRenewBefore of expiry (*certs.Service).
	Obtainer CertObtainer
	// Audit records domains added and removed (audit.New over DB when nil).
	Audit *audit.Log
	// Logger receives state changes (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Jobs": d.Jobs != nil, "Projects": d.Projects != nil, "Pub": d.Pub != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("domains: missing dependencies")

// jobRecheck is the kind of the periodic re-check.
const jobRecheck = "domains.recheck"

// Service is the custom domains area.
type Service struct {
	cfg      Config
	d        Deps
	resolver *net.Resolver
	m        *metrics
}

// New builds the area and registers its periodic re-check on d.Jobs. It
// starts nothing.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
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
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	s := &Service{cfg: cfg, d: d, resolver: newResolver(cfg.DNSResolver), m: newMetrics()}
	d.Jobs.Register(jobRecheck, s.recheckJob, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{5 * time.Minute}, Timeout: 30 * time.Minute})
	d.Jobs.Every(jobRecheck, cfg.RecheckEvery)
	if d.Obtainer != nil {
		d.Jobs.Register(jobCerts, s.certsJob, jobs.KindOptions{MaxAttempts: 1, Timeout: 30 * time.Minute})
		d.Jobs.Every(jobCerts, cfg.CertEvery)
	}
	return s, nil
}

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }

// siteHost is a project's own address, the target of CNAME records.
func (s *Service) siteHost(p projects.Project) string {
	return strings.ToLower(p.Slug) + "." + s.cfg.AppsDomain
}
