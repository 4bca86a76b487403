// Package mail is the e-mail the platform and its projects send: a durable
// queue on the jobs facility that delivers through an SMTP relay (or writes
// each message to a folder when none is configured), retries temporary
// (4xx) refusals with exponential backoff and records permanent (5xx) ones,
// counts every accepted recipient against the plan's daily limit and as the
// emails metric, and signs mail from a project's verified sending domain
// with that domain's DKIM key (sealed at rest).
//
// The platform's own mail (verification tokens, invitations) enters through
// Send, the accounts.Mailer interface; apps send through
// POST /api/projects/{id}/emails.
package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Defaults of Config.
const (
	// DefaultMaxRecipients bounds the recipients of one message.
	DefaultMaxRecipients = 50
	// DefaultMaxContentBytes bounds a message's text and HTML together.
	DefaultMaxContentBytes = 512 << 10
	// DefaultMaxAttempts is how many delivery attempts a message gets
	// before it fails for good.
	DefaultMaxAttempts = 10
	// DefaultTimeout bounds one delivery attempt (connection, TLS, AUTH and
	// the transfer).
	DefaultTimeout = time.Minute
	// DefaultDomainsPerProject bounds a project's sending domains.
	DefaultDomainsPerProject = 10
	// DefaultRecheckEvery is how often every sending domain's records are
	// looked up again.
	DefaultRecheckEvery = 24 * time.Hour
	// MaxSubject bounds a subject, in bytes (RFC 5322's line limit less
	// the header name).
	MaxSubject = 900
	// Window is the period of the per-plan sending limit.
	Window = 24 * time.Hour
)

// DefaultBackoff is the wait before each retry of a temporary failure:
// doubling from 30 seconds, at most an hour (about six hours in all over
// DefaultMaxAttempts).
var DefaultBackoff = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute,
	8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour}

// DefaultPerDay is how many recipients a workspace's projects may send to
// in any 24 hours, by plan (ours: the specification names no number).
var DefaultPerDay = map[plans.Name]int{
	plans.Hobby:      100,
	plans.Pro:        10_000,
	plans.Team:       50_000,
	plans.Scale:      100_000,
	plans.Enterprise: 100_000,
}

// Config is the area's configuration. The zero value writes every message
// to Dir (which must then be set) from DefaultFrom.
type Config struct {
	// SMTPURL is the relay: smtp://user:pass@host:port (STARTTLS when the
	// relay offers it; ?starttls=required insists, ?starttls=off never
	// tries) or smtps://user:pass@host:port (TLS from the first byte).
	// Empty: messages are written to Dir.
	SMTPURL string `json:"smtpUrl,omitempty"`
	// From is the platform's own sender ("Name <address>" or an address):
	// its mail, and projects' mail without a verified sending domain, go
	// from it (DefaultFrom when empty).
	From string `json:"from,omitempty"`
	// Dir receives one .eml file per message when SMTPURL is empty.
	Dir string `json:"dir,omitempty"`
	// DNSResolver is the DNS server (host:port) sending domains are looked
	// up at; empty uses the system's resolver.
	DNSResolver string `json:"dnsResolver,omitempty"`
	// SPFInclude is the domain projects' SPF records must include (the
	// relay's); the domain of From when empty.
	SPFInclude string `json:"spfInclude,omitempty"`
	// HELO is the name given to the relay (the domain of From when empty).
	HELO string `json:"helo,omitempty"`
	// ReservedDomains may not be added as sending domains, nor any name
	// under them (the platform's own domains: the apps domain, From's).
	ReservedDomains []string `json:"reservedDomains,omitempty"`
	// PerDay is the per-plan limit of recipients in any 24 hours
	// (DefaultPerDay for plans it does not name; 0 or less: no limit).
	PerDay map[plans.Name]int `json:"perDay,omitempty"`
	// MaxRecipients bounds one message's recipients (DefaultMaxRecipients).
	MaxRecipients int `json:"maxRecipients,omitempty"`
	// MaxContentBytes bounds text and HTML together (DefaultMaxContentBytes).
	MaxContentBytes int `json:"maxContentBytes,omitempty"`
	// MaxAttempts is how many delivery attempts a message gets
	// (DefaultMaxAttempts).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// Backoff is the wait before each retry; the last value repeats
	// (DefaultBackoff).
	Backoff []time.Duration `json:"backoff,omitempty"`
	// Timeout bounds one delivery attempt (DefaultTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// DomainsPerProject bounds a project's sending domains
	// (DefaultDomainsPerProject).
	DomainsPerProject int `json:"domainsPerProject,omitempty"`
	// RecheckEvery is how often sending domains are looked up again
	// (DefaultRecheckEvery).
	RecheckEvery time.Duration `json:"recheckEvery,omitempty"`
	// DKIMKeyBits is the size of the RSA key made for each sending domain
	// (DefaultDKIMKeyBits).
	DKIMKeyBits int `json:"dkimKeyBits,omitempty"`
	// BounceDomain is the domain of every message's envelope sender
	// (bounces+<token>@<BounceDomain>), where delivery status
	// notifications and complaints come back; its MX must reach the bounce
	// listener. The domain of From when empty.
	BounceDomain string `json:"bounceDomain,omitempty"`
	// BounceLocal is the local part before "+<token>" (DefaultBounceLocal).
	BounceLocal string `json:"bounceLocal,omitempty"`
	// BounceListen, when set, is the host:port RunBounces accepts reports
	// on (SMTP, as an MX would be reached).
	BounceListen string `json:"bounceListen,omitempty"`
	// BounceMaxBytes bounds one report message (DefaultBounceMaxBytes).
	BounceMaxBytes int `json:"bounceMaxBytes,omitempty"`
	// BounceMaxConns bounds simultaneous connections to the listener
	// (DefaultBounceMaxConns).
	BounceMaxConns int `json:"bounceMaxConns,omitempty"`
	// BounceTimeout bounds one connection to the listener
	// (DefaultBounceTimeout).
	BounceTimeout time.Duration `json:"bounceTimeout,omitempty"`
	// TLS, when set, is the relay's TLS configuration (a private CA's
	// roots); the system's roots otherwise.
	TLS *tls.Config `json:"-"`
}

// DefaultFrom is the platform's sender when Config.From is empty.
const DefaultFrom = "Platform <noreply@localhost>"

// Provision fills defaults.
func (c *Config) Provision() {
	if strings.TrimSpace(c.From) == "" {
		c.From = DefaultFrom
	}
	if c.MaxRecipients <= 0 {
		c.MaxRecipients = DefaultMaxRecipients
	}
	if c.MaxContentBytes <= 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if len(c.Backoff) == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DomainsPerProject <= 0 {
		c.DomainsPerProject = DefaultDomainsPerProject
	}
	if c.RecheckEvery <= 0 {
		c.RecheckEvery = DefaultRecheckEvery
	}
	if c.DKIMKeyBits <= 0 {
		c.DKIMKeyBits = DefaultDKIMKeyBits
	}
	if c.BounceLocal == "" {
		c.BounceLocal = DefaultBounceLocal
	}
	if c.BounceMaxBytes <= 0 {
		c.BounceMaxBytes = DefaultBounceMaxBytes
	}
	if c.BounceMaxConns <= 0 {
		c.BounceMaxConns = DefaultBounceMaxConns
	}
	if c.BounceTimeout <= 0 {
		c.BounceTimeout = DefaultBounceTimeout
	}
	c.BounceDomain = strings.ToLower(strings.TrimSpace(c.BounceDomain))
	if a, err := mail.ParseAddress(c.From); err == nil {
		_, dom, _ := strings.Cut(a.Address, "@")
		if c.BounceDomain == "" {
			c.BounceDomain = strings.ToLower(dom)
		}
		if c.SPFInclude == "" {
			c.SPFInclude = strings.ToLower(dom)
		}
		if c.HELO == "" {
			c.HELO = strings.ToLower(dom)
		}
	}
}

// Validate checks a provisioned Config; it changes nothing.
func (c *Config) Validate() error {
	if _, err := platformFrom(c.From); err != nil {
		return err
	}
	if c.SMTPURL == "" && c.Dir == "" {
		return errors.New("mail: set an SMTP relay URL or a directory to write messages to")
	}
	if c.SMTPURL != "" {
		if _, err := ParseRelayURL(c.SMTPURL); err != nil {
			return err
		}
	}
	if c.BounceDomain == "" || strings.ContainsAny(c.BounceDomain, "@ <>\"") || strings.ContainsFunc(c.BounceDomain, isControl) {
		return fmt.Errorf("mail: bounce domain %q must be a domain name (the MX of bounces)", c.BounceDomain)
	}
	if c.BounceLocal == "" || strings.ContainsAny(c.BounceLocal, "@+ <>\"") || strings.ContainsFunc(c.BounceLocal, isControl) {
		return fmt.Errorf("mail: bounce local part %q must be letters, digits, dots or dashes, without '+'", c.BounceLocal)
	}
	if c.BounceListen != "" {
		if _, _, err := net.SplitHostPort(c.BounceListen); err != nil {
			return fmt.Errorf("mail: bounce listener %q must be host:port: %w", c.BounceListen, err)
		}
	}
	if c.DNSResolver != "" {
		if _, _, err := net.SplitHostPort(c.DNSResolver); err != nil {
			return fmt.Errorf("mail: DNS resolver %q must be host:port: %w", c.DNSResolver, err)
		}
	}
	return nil
}

// platformFrom reads Config.From: one address, without control
// characters; a host without a dot (noreply@localhost) is allowed for the
// platform's own sender.
func platformFrom(s string) (*mail.Address, error) {
	a, err := mail.ParseAddress(s)
	if err != nil || strings.ContainsFunc(s, isControl) || !strings.Contains(a.Address, "@") {
		return nil, fmt.Errorf("mail: from %q must be an address or Name <address>", s)
	}
	return a, nil
}

// limit is the plan's recipients per Window (0: none).
func (c *Config) limit(p plans.Name) int {
	return plans.Lookup(c.PerDay, DefaultPerDay, p)
}

// Projects is what the area needs of projects (*projects.Service).
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Deps are the services the area is built on.
type Deps struct {
	DB *store.DB
	// Clock is the time source (clock.System when nil).
	Clock clock.Clock
	// Sealer seals message content and DKIM private keys at rest.
	Sealer *seal.Sealer
	// Meter records the emails metric.
	Meter    metering.BatchRecorder
	Jobs     jobs.Queue
	Projects Projects
	Plans    plans.Source
	// Audit records sending domains added and removed (audit.New over DB
	// when nil).
	Audit *audit.Log
	// Logger receives deliveries and failures, never content or secrets
	// (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Sealer": d.Sealer != nil, "Meter": d.Meter != nil,
		"Jobs": d.Jobs != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil} {
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
var ErrNotConfigured = errors.New("mail: missing dependencies")

// Job kinds of the area.
const (
	jobDeliver = "mail.deliver"
	jobRecheck = "mail.domains.recheck"
)

// Service is the e-mail area.
type Service struct {
	cfg      Config
	d        Deps
	from     *mail.Address
	tr       transport
	resolver *net.Resolver
	m        *metrics
}

var _ accounts.Mailer = (*Service)(nil)

// New builds the area and registers its jobs (delivery, and the periodic
// re-check of sending domains) on d.Jobs. It starts nothing: the jobs
// runner delivers.
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
	from, err := platformFrom(cfg.From)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, d: d, from: from, m: newMetrics(), resolver: newResolver(cfg.DNSResolver)}
	if cfg.SMTPURL != "" {
		rc, err := ParseRelayURL(cfg.SMTPURL)
		if err != nil {
			return nil, err
		}
		s.tr = &smtpTransport{rc: rc, helo: cfg.HELO, tls: cfg.TLS, timeout: cfg.Timeout}
	} else {
		s.tr = &fileTransport{dir: cfg.Dir, log: d.Logger, now: d.Clock.Now}
	}
	d.Jobs.Register(jobDeliver, s.deliverJob, jobs.KindOptions{MaxAttempts: cfg.MaxAttempts, Backoff: cfg.Backoff, Timeout: cfg.Timeout + 30*time.Second})
	d.Jobs.Register(jobRecheck, s.recheckJob, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{10 * time.Minute}, Timeout: 10 * time.Minute})
	d.Jobs.Every(jobRecheck, cfg.RecheckEvery)
	return s, nil
}

// Describe says in one line where messages go, for the start-up log: the
// relay (without its credentials) or the folder they are written to.
func (s *Service) Describe() string { return s.tr.describe() }

// CheckRelay connects to the relay once (TLS and AUTH as configured) and
// says what went wrong, so a misconfigured relay shows at start rather than
// at the first message. With no relay it checks nothing.
func (s *Service) CheckRelay(ctx context.Context) error { return s.tr.check(ctx) }

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }
