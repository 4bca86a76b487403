// Package payments is the payments area: the platform is the merchant,
// buyers pay on a hosted checkout, and each sale's net (after the fee of 3.9
// percent plus 30 cents) accrues as the project's Earnings, held 7 days,
// then withdrawn by the workspace owner within the payout rules. Money is
// integer cents end to end; every movement is a double-entry ledger row
// written in the same transaction as the change it belongs to. Refunds,
// disputes and payment webhooks (signed like Stripe's) are here too; the
// processor is the built-in test processor or Stripe (package processor).
// See README.md.
package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/payments/processor"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Metrics this area records (the usage report's "checkout sessions").
const (
	MetricCheckoutSessions metering.Metric = "checkout_sessions"
	MetricPayments         metering.Metric = "payments"
)

// JobWebhook is the job kind of one webhook delivery; its payload is
// {"delivery": "<event id>"}.
const JobWebhook = "payments.webhook"

// DeliverySchedule is the wait before each retry of a failed webhook
// delivery; the last one repeats, for 8 retries after the first attempt.
var DeliverySchedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// Delivery limits.
const (
	// MaxDeliveryAttempts is the first attempt plus 8 retries.
	MaxDeliveryAttempts = 9
	// DeliveryTimeout is how long a receiver has to answer.
	DeliveryTimeout = 5 * time.Second
)

// Config is the payments area's configuration.
type Config struct {
	// PublicBaseURL is where the hosted checkout pages are served (the
	// API's address): links are PublicBaseURL/pay/{sessionId}.
	PublicBaseURL string `json:"publicBaseUrl"`
	// AllowPrivateNetworks lets webhook URLs be on loopback, private or
	// link-local addresses (tests, local development).
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// Processor is "test" (the default, built in) or "stripe".
	Processor string `json:"processor"`
	// StripeKey is the Stripe secret key (processor stripe).
	StripeKey string `json:"-"`
	// StripeBaseURL replaces Stripe's API address (stripe-mock in tests).
	StripeBaseURL string `json:"stripeBaseUrl"`
}

// DefaultPublicBaseURL is the API's default address.
const DefaultPublicBaseURL = "http://127.0.0.1:7070"

// Provision fills defaults.
func (c *Config) Provision() {
	if c.PublicBaseURL == "" {
		c.PublicBaseURL = DefaultPublicBaseURL
	}
	c.PublicBaseURL = strings.TrimRight(c.PublicBaseURL, "/")
	if c.Processor == "" {
		c.Processor = processor.NameTest
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch c.Processor {
	case processor.NameTest:
	case processor.NameStripe:
		if c.StripeKey == "" {
			return errors.New("payments: processor stripe needs a Stripe secret key")
		}
	default:
		return fmt.Errorf("payments: unknown processor %q (want test or stripe)", c.Processor)
	}
	if !strings.HasPrefix(c.PublicBaseURL, "http://") && !strings.HasPrefix(c.PublicBaseURL, "https://") {
		return fmt.Errorf("payments: public base URL %q must be http or https", c.PublicBaseURL)
	}
	return nil
}

// Projects is what the area needs of the projects area.
type Projects interface {
	// Get returns a project of the workspace (404 otherwise).
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// Writable returns the project when it accepts changes (409 while its
	// deletion is incomplete).
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Email tells whether a workspace's owner verified their e-mail address.
type Email interface {
	OwnerEmailVerified(ctx context.Context, workspace string) (bool, error)
}

// Deps are the core services the area is built on.
type Deps struct {
	DB     *store.DB
	Clock  clock.Clock
	Audit  *audit.Log
	Meter  metering.Recorder
	Sealer *seal.Sealer
	// Projects finds projects and tells whether they accept changes.
	Projects Projects
	// Plans tells the plan (payment accounts per plan).
	Plans plans.Source
	// Email gates live links on the owner's verified e-mail.
	Email Email
	// Jobs runs webhook deliveries durably, and the sync with the
	// processor every SyncEvery.
	Jobs jobs.Queue
	// HTTPClient sends webhooks; its dialer must refuse private networks
	// unless they are allowed (netguard.Dialer). Redirects are never
	// followed and each delivery has 5 seconds, whatever it sets.
	HTTPClient *http.Client
	// CheckURL refuses a webhook URL on a private, loopback or link-local
	// network (netguard.CheckURL with AllowPrivateNetworks).
	CheckURL func(raw string) error
	// Mailer sends receipts to buyers who gave an address and notices to
	// the workspace's owners when a webhook endpoint keeps failing (none
	// when nil).
	Mailer Mailer
	// Processor replaces the configured processor (tests).
	Processor processor.Processor
	Logger    *slog.Logger
}

// Service is the payments area.
type Service struct {
	cfg  Config
	d    Deps
	proc processor.Processor
	// test is the built-in processor when it is the one in use.
	test   *processor.Test
	client *http.Client
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Meter": d.Meter != nil, "Sealer": d.Sealer != nil, "Projects": d.Projects != nil,
		"Plans": d.Plans != nil, "Email": d.Email != nil, "Jobs": d.Jobs != nil,
		// Webhooks need a client whose dialer guards private networks and
		// the URL check (netguard).
		"HTTPClient": d.HTTPClient != nil, "CheckURL": d.CheckURL != nil} {
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
var ErrNotConfigured = errors.New("payments: missing dependencies")

// New builds the service and registers its jobs: webhook deliveries and
// the sync with the processor every SyncEvery. It starts nothing: the job
// runner runs them.
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
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, d: d}
	switch {
	case d.Processor != nil:
		s.proc = d.Processor
	case cfg.Processor == processor.NameStripe:
		s.proc = processor.NewStripe(cfg.StripeKey, cfg.StripeBaseURL, cfg.PublicBaseURL)
	default:
		s.proc = processor.NewTest(d.DB, d.Clock, cfg.PublicBaseURL)
	}
	s.test, _ = s.proc.(*processor.Test)
	c := *d.HTTPClient
	c.Timeout = DeliveryTimeout
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.client = &c
	d.Jobs.Register(JobWebhook, s.runDeliveryJob, jobs.KindOptions{MaxAttempts: MaxDeliveryAttempts, Backoff: DeliverySchedule,
		Timeout: DeliveryTimeout + 5*time.Second})
	d.Jobs.Register(JobSync, s.runSyncJob, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute, 5 * time.Minute}, Timeout: 5 * time.Minute})
	d.Jobs.Every(JobSync, SyncEvery)
	d.Jobs.Register(JobReceipt, s.runReceiptJob, jobs.KindOptions{MaxAttempts: 5, Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}})
	return s, nil
}

// Processor is the processor in use.
func (s *Service) Processor() processor.Processor { return s.proc }

// Config returns the provisioned configuration.
func (s *Service) Config() Config { return s.cfg }

func (s *Service) now() time.Time { return s.d.Clock.Now() }
