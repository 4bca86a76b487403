package controlplane

import (
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/plans"
)

// Config is the control plane's configuration.
type Config struct {
	// DataDir holds the metadata database, keys and everything stored.
	DataDir string `json:"dataDir"`
	// AppsDomain is the domain projects answer under.
	AppsDomain string `json:"appsDomain"`
	// AppsPort is the edge's HTTPS port, shown in addresses when not 443.
	AppsPort int `json:"appsPort"`
	// Bootstrap describes the first workspace, created on an empty data dir.
	Bootstrap accounts.BootstrapConfig `json:"bootstrap"`
	// Accounts sets who may sign up, new workspaces' default plan and how
	// many workspaces one person may own (flags --signup, --default-plan).
	Accounts accounts.Config `json:"accounts"`
	// DeferBootstrap leaves creating the first workspace to
	// EnsureBootstrap instead of New: `platform serve` creates it once
	// every listener is up, so a start that fails creates no owner key it
	// never showed.
	DeferBootstrap bool `json:"deferBootstrap,omitempty"`
	// OriginProbeEvery is how often the origins of serving apps and
	// functions are checked (DefaultOriginProbeEvery when 0; negative: never,
	// for tests that probe explicitly).
	OriginProbeEvery time.Duration `json:"originProbeEvery"`
	// KeyCallsFlush is how often counted API-key calls are written
	// (metering.DefaultKeyCallsFlush when 0).
	KeyCallsFlush time.Duration `json:"keyCallsFlush"`
	// Clock is the time source (the system clock when nil).
	Clock clock.Clock `json:"-"`
	// Logger receives structured logs (slog.Default when nil).
	Logger *slog.Logger `json:"-"`
	// Registerer receives the control plane's metrics (the admin
	// listener's registry); when nil they are kept on a registry of their
	// own, reachable through Metrics.
	Registerer prometheus.Registerer `json:"-"`
	// Jobs tunes the background job runner (workers, poll interval).
	Jobs jobs.Config `json:"jobs"`
	// AllowPrivateNetworks lets webhook URLs (and app origins) be on
	// loopback, private or link-local addresses (tests, local development).
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// OwnAddrs are the platform's own listeners, never reachable as a
	// webhook target whatever AllowPrivateNetworks says.
	OwnAddrs []netip.AddrPort `json:"-"`
	// Store is the metadata database: empty for DataDir/platform.db
	// (SQLite), or a postgres:// address (controlplane/store/README.md).
	Store string `json:"store,omitempty"`
	// SealKeyFile names the 32-byte key that seals secrets at rest; empty
	// is DataDir/keys/seal.key, created on first start. Replicas sharing a
	// PostgreSQL store must share the key: point each at the same file.
	SealKeyFile string `json:"sealKeyFile,omitempty"`
	// NodeID names this replica among several (--node-id); empty derives
	// one kept in DataDir/node-id.
	NodeID string `json:"nodeId,omitempty"`
	// NodeURL is where other replicas reach this API (--node-url,
	// http://host:port); empty: a single node. Databases live on the node
	// that created them; the others forward to it (SCALING.md).
	NodeURL string `json:"nodeUrl,omitempty"`
	// Blobs is where deployed files and repo snapshots live: a directory,
	// or s3://BUCKET/PREFIX?endpoint=... (controlplane/blobs/README.md);
	// empty is DataDir/blobs.
	Blobs string `json:"blobs,omitempty"`
	// APIBaseURL is the address people reach the control plane at: the
	// command line's --public-url (an https:// host behind the edge or a
	// proxy), else the API's listening address. Every absolute link the
	// control plane hands out starts with it: hosted checkout pages and
	// payout onboarding returns, media upload and playback URLs, storage
	// bucket object and signed URLs, sign-in token issuers. Processes on
	// this machine that call the API back (live ingest's nginx) are given
	// the listening address in Media.Live.NotifyBaseURL instead.
	APIBaseURL string `json:"apiBaseUrl"`
	// PublicURL is --public-url as given (empty when it was not): answers
	// that otherwise echo the scheme and host a request came in on
	// (database endpoints, agent event and chat URLs) start with it, so
	// they are right behind a TLS-terminating proxy.
	PublicURL string `json:"publicUrl,omitempty"`
	// Media configures video processing and live ingest (Live nil: live
	// channels answer 503); Dir and the base URLs default from DataDir and
	// APIBaseURL.
	Media media.Config `json:"media"`
	// Buckets configures storage buckets; PublicBaseURL (where public
	// objects and signed URLs are served) defaults to APIBaseURL, and is
	// the edges' storage host when one serves them (--storage-host).
	Buckets buckets.Config `json:"buckets"`
	// AI configures the AI gateway: providers and catalogue overrides from
	// the --ai-config file (ai.LoadConfig); empty answers 503 ai_unavailable.
	AI ai.Config `json:"ai"`
	// Runtime runs the apps, worker programs and functions users deploy
	// (Sandbox "": off, and such deploys answer 503 runtime_unavailable).
	Runtime RuntimeConfig `json:"runtime"`
	// Payments configures the payments area (processor, hosted page base
	// URL: the API's address).
	Payments payments.Config `json:"payments"`
	// S3Host is the host name at whose root the S3-compatible surface of
	// storage buckets answers (--s3-host), for S3 clients whose endpoint
	// takes no path (minio-go, mc); empty: the surface answers only under
	// /s3 on the API's address (SDKs and the AWS CLI take an endpoint with
	// a path).
	S3Host string `json:"s3Host,omitempty"`
	// Mail configures e-mail: the SMTP relay (--smtp-url; empty: messages
	// are written to DataDir/mail), the platform's sender (--mail-from) and
	// the DNS resolver sending domains are looked up at (--dns-resolver).
	Mail mail.Config `json:"mail"`
	// Domains configures custom domains: the edges' public addresses apex
	// domains point at (--edge-addresses), whether edges use ACME, and the
	// resolver records are looked up at (Mail's --dns-resolver when
	// empty). AppsDomain is filled from the Config's.
	Domains domains.Config `json:"domains"`
	// CertsACME, when set (--acme-email), is the ACME CA the control plane
	// obtains verified custom domains' certificates from ahead of their
	// first visitor (the edges' CA and account).
	CertsACME *certs.ACMEConfig `json:"certsAcme,omitempty"`
	// Memory sets memory stores' per-plan caps and the sweep's schedule
	// (controlplane/memory; the zero value is the defaults).
	Memory memory.Config `json:"memory"`
}

// DefaultOriginProbeEvery is how often the origins of serving apps and
// functions are checked (a project whose origin does not answer is down).
const DefaultOriginProbeEvery = deploys.DefaultProbeEvery

// Provision fills defaults.
func (c *Config) Provision() {
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	// Absolute, so that child processes started elsewhere (nginx for live
	// ingest, apps in their own directories) find what it names.
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	if c.AppsDomain == "" {
		c.AppsDomain = "localhost"
	}
	if c.OriginProbeEvery == 0 {
		c.OriginProbeEvery = DefaultOriginProbeEvery
	}
	if c.KeyCallsFlush <= 0 {
		c.KeyCallsFlush = metering.DefaultKeyCallsFlush
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Bootstrap.WorkspaceName == "" {
		c.Bootstrap.WorkspaceName = "My workspace"
	}
	if c.Bootstrap.OwnerEmail == "" {
		c.Bootstrap.OwnerEmail = "owner@example.com"
	}
	if c.Bootstrap.Plan == "" {
		c.Bootstrap.Plan = plans.Hobby
	}
	if c.APIBaseURL == "" {
		c.APIBaseURL = "http://127.0.0.1:7070"
	}
	if c.Payments.PublicBaseURL == "" {
		c.Payments.PublicBaseURL = c.APIBaseURL
	}
	if c.Media.Dir == "" {
		c.Media.Dir = filepath.Join(c.DataDir, "media")
	}
	if c.Media.PublicBaseURL == "" {
		c.Media.PublicBaseURL = c.APIBaseURL
	}
	if c.Media.Live != nil && c.Media.Live.NotifyBaseURL == "" {
		c.Media.Live.NotifyBaseURL = c.APIBaseURL
	}
	if c.Buckets.PublicBaseURL == "" {
		c.Buckets.PublicBaseURL = c.APIBaseURL
	}
	if c.Mail.Dir == "" {
		c.Mail.Dir = filepath.Join(c.DataDir, "mail")
	}
	if c.Mail.From == "" {
		c.Mail.From = "Platform <noreply@" + c.AppsDomain + ">"
	}
	if !slices.Contains(c.Mail.ReservedDomains, c.AppsDomain) {
		c.Mail.ReservedDomains = append(c.Mail.ReservedDomains, c.AppsDomain)
	}
	if c.Domains.AppsDomain == "" {
		c.Domains.AppsDomain = c.AppsDomain
	}
	if c.Domains.DNSResolver == "" {
		c.Domains.DNSResolver = c.Mail.DNSResolver
	}
	// The API's own host and the S3 host are the platform's, not a
	// project's custom domain.
	if u, err := url.Parse(c.APIBaseURL); err == nil && u.Hostname() != "" && net.ParseIP(u.Hostname()) == nil {
		c.Domains.ReservedDomains = append(c.Domains.ReservedDomains, u.Hostname())
	}
	if c.S3Host != "" {
		c.Domains.ReservedDomains = append(c.Domains.ReservedDomains, c.S3Host)
	}
	// So is the storage host public objects are served at.
	if u, err := url.Parse(c.Buckets.PublicBaseURL); err == nil && u.Hostname() != "" && net.ParseIP(u.Hostname()) == nil &&
		!slices.Contains(c.Domains.ReservedDomains, u.Hostname()) {
		c.Domains.ReservedDomains = append(c.Domains.ReservedDomains, u.Hostname())
	}
}
