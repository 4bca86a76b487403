package edge

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/geodata"
)

// Defaults used by Config.Provision for zero fields. Together they make slow
// clients, huge headers and endless bodies harmless: every phase of a
// request has a deadline and every buffer a bound.
const (
	// DefaultHTTPAddr is the plain-HTTP listener (redirects to HTTPS).
	DefaultHTTPAddr = ":8000"
	// DefaultHTTPSAddr is the HTTPS listener over TCP, and HTTP/3 over UDP.
	DefaultHTTPSAddr = ":8443"
	// DefaultAppsDomain is the domain sites answer under.
	DefaultAppsDomain = "localhost"

	// DefaultReadTimeout bounds reading a request's header (and a body of a
	// request without one worth streaming): a slowloris client is cut off.
	DefaultReadTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds reading a request body that is streamed to
	// an origin.
	DefaultBodyTimeout = 5 * time.Minute
	// DefaultWriteTimeout bounds writing one response.
	DefaultWriteTimeout = 5 * time.Minute
	// DefaultIdleTimeout is how long a keep-alive connection may wait for
	// its next request.
	DefaultIdleTimeout = 90 * time.Second
	// DefaultMaxHeaderBytes bounds a request's header block; larger ones get
	// 431.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultMaxBodyBytes bounds a request body forwarded to an origin;
	// larger ones get 413.
	DefaultMaxBodyBytes = 100 << 20
	// DefaultMaxConnsPerIP bounds concurrent connections from one address
	// (0 would mean no limit). Trusted proxies are exempt (see
	// DefaultMaxProxyConns).
	DefaultMaxConnsPerIP = 1024
	// DefaultMaxProxyConns bounds the connections of all trusted proxies
	// together: they carry many visitors each, so the per-address cap does
	// not apply to them.
	DefaultMaxProxyConns = 32 * 1024
	// DefaultShutdownTimeout bounds a graceful stop: requests in flight
	// have this long to finish.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultUpgradeIdleTimeout closes a spliced WebSocket (or other
	// upgraded) connection when neither side sent anything for this long.
	DefaultUpgradeIdleTimeout = 5 * time.Minute
	// DefaultUpgradeMaxDuration closes a spliced connection this long after
	// it was opened, however busy.
	DefaultUpgradeMaxDuration = 24 * time.Hour
	// DefaultConcurrency bounds the requests served at once.
	DefaultConcurrency = 64 * 1024

	// DefaultOriginDialTimeout bounds connecting to an origin (then 502).
	DefaultOriginDialTimeout = 5 * time.Second
	// DefaultOriginTimeout bounds waiting for an origin's response header
	// (then 504).
	DefaultOriginTimeout = 60 * time.Second
	// DefaultOriginIdleTimeout bounds a pause while streaming a body to or
	// from an origin.
	DefaultOriginIdleTimeout = 60 * time.Second
	// DefaultOriginMaxConns bounds the connections to one origin.
	DefaultOriginMaxConns = 512
	// DefaultOriginKeepAlive is how long an idle connection to an origin is
	// kept for reuse: shorter than the keep-alive timeouts origins commonly
	// use (Node.js 5 s, Apache 5 s), so the edge closes an idle connection
	// before the origin does. A connection the origin closed sooner (gunicorn:
	// 2 s) is found before reuse (see originConn).
	DefaultOriginKeepAlive = 4 * time.Second

	// DefaultSyncWait is the long-poll wait asked of the control plane.
	DefaultSyncWait = 30 * time.Second
	// DefaultFlushInterval is how often Shield counts are sent.
	DefaultFlushInterval = 5 * time.Second

	// DefaultPasswordAttempts is how many wrong site passwords one client
	// address may try in a burst before it is throttled.
	DefaultPasswordAttempts = 10
	// DefaultPasswordRefill is how often one more attempt is granted.
	DefaultPasswordRefill = 6 * time.Second

	// DefaultMaxCompressBytes is the largest file compressed for gzip or
	// brotli; larger ones are sent as they are.
	DefaultMaxCompressBytes = 8 << 20
)

// ErrInvalidConfig is wrapped by the errors of Config.Validate.
var ErrInvalidConfig = errors.New("edge: invalid config")

// Config configures an Edge. The zero value works once provisioned, except
// that ControlPlane and Token are required to sync.
type Config struct {
	// HTTPAddr is the plain-HTTP listener; it redirects to HTTPS (ACME
	// http-01 challenges excepted). Default DefaultHTTPAddr; "-" for none.
	HTTPAddr string `json:"httpAddr,omitempty"`
	// HTTPSAddr is the HTTPS listener over TCP, and HTTP/3 over UDP on the
	// same port. Default DefaultHTTPSAddr.
	HTTPSAddr string `json:"httpsAddr,omitempty"`
	// AppsDomain is the domain sites answer under; the local CA signs
	// certificates for names under it. Default DefaultAppsDomain.
	AppsDomain string `json:"appsDomain,omitempty"`
	// DataDir holds the edge's state: the last good configuration
	// (DataDir/edge/config.json), fetched blobs (DataDir/edge/blobs) and the
	// local CA (DataDir/ca). Required.
	DataDir string `json:"dataDir"`
	// BlobDir, when set, is a content-addressed blob directory readable
	// directly (the control plane's DATA/blobs in `platform serve`); blobs
	// missing there are fetched from the control plane.
	BlobDir string `json:"blobDir,omitempty"`
	// ControlPlane is the control plane's base URL, e.g.
	// http://127.0.0.1:7070. Required.
	ControlPlane string `json:"controlPlane"`
	// Token is the edge token (svc_edge_...). Required.
	Token string `json:"-"`
	// GeoIP is the country database (MMDB). A missing file leaves every
	// address in country XX until it appears.
	GeoIP string `json:"geoip,omitempty"`
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []string `json:"trustedProxies,omitempty"`
	// ACME, when set, obtains certificates from an ACME CA instead of the
	// local CA.
	ACME *ACMEConfig `json:"acme,omitempty"`
	// Cache bounds the response cache.
	Cache cache.Config `json:"cache"`

	// ReadTimeout: see DefaultReadTimeout.
	ReadTimeout time.Duration `json:"readTimeout,omitempty"`
	// BodyTimeout: see DefaultBodyTimeout.
	BodyTimeout time.Duration `json:"bodyTimeout,omitempty"`
	// WriteTimeout: see DefaultWriteTimeout.
	WriteTimeout time.Duration `json:"writeTimeout,omitempty"`
	// IdleTimeout: see DefaultIdleTimeout.
	IdleTimeout time.Duration `json:"idleTimeout,omitempty"`
	// MaxHeaderBytes: see DefaultMaxHeaderBytes.
	MaxHeaderBytes int `json:"maxHeaderBytes,omitempty"`
	// MaxBodyBytes: see DefaultMaxBodyBytes.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// MaxConnsPerIP: see DefaultMaxConnsPerIP.
	MaxConnsPerIP int `json:"maxConnsPerIp,omitempty"`
	// MaxProxyConns: see DefaultMaxProxyConns.
	MaxProxyConns int `json:"maxProxyConns,omitempty"`
	// ShutdownTimeout: see DefaultShutdownTimeout.
	ShutdownTimeout time.Duration `json:"shutdownTimeout,omitempty"`
	// UpgradeIdleTimeout: see DefaultUpgradeIdleTimeout.
	UpgradeIdleTimeout time.Duration `json:"upgradeIdleTimeout,omitempty"`
	// UpgradeMaxDuration: see DefaultUpgradeMaxDuration.
	UpgradeMaxDuration time.Duration `json:"upgradeMaxDuration,omitempty"`
	// ReusePort binds the listeners with SO_REUSEPORT for a graceful
	// reload: start the new process on the same addresses, wait until it is
	// ready, then stop the old one, which refuses new connections at once
	// and lets its requests in flight finish (ShutdownTimeout).
	ReusePort bool `json:"reusePort,omitempty"`
	// AccessLog turns on access logs: one JSON line per request, to this
	// file (appended, created 0640) or to standard output with "-". Off
	// when empty (the default).
	AccessLog string `json:"accessLog,omitempty"`
	// AccessLogWriter, when set with AccessLog, receives the lines instead
	// of the file (tests, benchmarks).
	AccessLogWriter io.Writer `json:"-"`
	// Concurrency: see DefaultConcurrency.
	Concurrency int `json:"concurrency,omitempty"`
	// OriginDialTimeout: see DefaultOriginDialTimeout.
	OriginDialTimeout time.Duration `json:"originDialTimeout,omitempty"`
	// OriginTimeout: see DefaultOriginTimeout.
	OriginTimeout time.Duration `json:"originTimeout,omitempty"`
	// OriginIdleTimeout: see DefaultOriginIdleTimeout.
	OriginIdleTimeout time.Duration `json:"originIdleTimeout,omitempty"`
	// OriginMaxConns: see DefaultOriginMaxConns.
	OriginMaxConns int `json:"originMaxConns,omitempty"`
	// OriginKeepAlive: see DefaultOriginKeepAlive.
	OriginKeepAlive time.Duration `json:"originKeepAlive,omitempty"`
	// AllowPrivateNetworks lets app and function origins be on loopback,
	// private, link-local and other internal addresses
	// (--allow-private-networks; tests and local development); the
	// platform's own listeners (OwnListeners) stay refused. Off, such origins are refused when the edge connects
	// (on the address the name resolves to then) and get 502. Origins of
	// processes the platform runs itself for a deployment (managed) are
	// never refused.
	AllowPrivateNetworks bool `json:"allowPrivateNetworks,omitempty"`
	// OwnListeners are the platform's other listeners ("host:port": the
	// API and admin addresses), never served as origins, whatever
	// AllowPrivateNetworks says; the edge's own HTTP and HTTPS addresses
	// are added by Listen.
	OwnListeners []string `json:"ownListeners,omitempty"`
	// SyncWait: see DefaultSyncWait.
	SyncWait time.Duration `json:"syncWait,omitempty"`
	// FlushInterval: see DefaultFlushInterval.
	FlushInterval time.Duration `json:"flushInterval,omitempty"`
	// PasswordAttempts: see DefaultPasswordAttempts.
	PasswordAttempts int `json:"passwordAttempts,omitempty"`
	// PasswordRefill: see DefaultPasswordRefill.
	PasswordRefill time.Duration `json:"passwordRefill,omitempty"`
	// MaxCompressBytes: see DefaultMaxCompressBytes.
	MaxCompressBytes int `json:"maxCompressBytes,omitempty"`

	// Locator, when set, replaces the database opened from GeoIP (tests,
	// benchmarks).
	Locator geodata.Locator `json:"-"`
	// Now is the clock of cache freshness, cookie expiry and the UTC day of
	// counts; when nil, a coarse clock (50 ms resolution, read without a
	// system call).
	Now func() time.Time `json:"-"`
	// Logger receives structured logs (slog.Default when nil).
	Logger *slog.Logger `json:"-"`

	trusted []netip.Prefix
	own     []netip.AddrPort // OwnListeners parsed, then the edge's bound addresses
}

// ACMEConfig turns on certificates from an ACME CA (Let's Encrypt by
// default) through golang.org/x/crypto/acme/autocert, for the hosts of the
// current configuration.
type ACMEConfig struct {
	// Email is the account's contact address.
	Email string `json:"email"`
	// DirectoryURL is the ACME directory; empty means Let's Encrypt.
	DirectoryURL string `json:"directoryUrl,omitempty"`
}

// Provision fills zero fields with their defaults and parses the trusted
// proxies (Validate reports a bad one).
func (c *Config) Provision() {
	def := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	defInt := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.HTTPSAddr == "" {
		c.HTTPSAddr = DefaultHTTPSAddr
	}
	if c.AppsDomain == "" {
		c.AppsDomain = DefaultAppsDomain
	}
	c.AppsDomain = strings.ToLower(strings.Trim(c.AppsDomain, "."))
	c.ControlPlane = strings.TrimRight(c.ControlPlane, "/")
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.BodyTimeout, DefaultBodyTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	defInt(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	defInt(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	defInt(&c.MaxProxyConns, DefaultMaxProxyConns)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.UpgradeIdleTimeout, DefaultUpgradeIdleTimeout)
	def(&c.UpgradeMaxDuration, DefaultUpgradeMaxDuration)
	defInt(&c.Concurrency, DefaultConcurrency)
	def(&c.OriginDialTimeout, DefaultOriginDialTimeout)
	def(&c.OriginTimeout, DefaultOriginTimeout)
	def(&c.OriginIdleTimeout, DefaultOriginIdleTimeout)
	defInt(&c.OriginMaxConns, DefaultOriginMaxConns)
	def(&c.OriginKeepAlive, DefaultOriginKeepAlive)
	def(&c.SyncWait, DefaultSyncWait)
	def(&c.FlushInterval, DefaultFlushInterval)
	defInt(&c.PasswordAttempts, DefaultPasswordAttempts)
	def(&c.PasswordRefill, DefaultPasswordRefill)
	defInt(&c.MaxCompressBytes, DefaultMaxCompressBytes)
	c.Cache.Provision()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.trusted, _ = ParseTrustedProxies(c.TrustedProxies)
	c.own, _ = ownAddrs(c.OwnListeners)
}

// Validate reports a configuration that cannot work. It is pure.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("dataDir is required"))
	}
	if c.ControlPlane == "" {
		errs = append(errs, errors.New("controlPlane is required (the control plane's URL)"))
	} else if u, err := url.Parse(c.ControlPlane); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("controlPlane %q is not an http(s) URL", c.ControlPlane))
	}
	if c.Token == "" {
		errs = append(errs, errors.New("an edge token is required"))
	}
	if c.HTTPAddr != "-" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("httpAddr %q: %v", c.HTTPAddr, err))
		}
	}
	if _, _, err := net.SplitHostPort(c.HTTPSAddr); err != nil {
		errs = append(errs, fmt.Errorf("httpsAddr %q: %v", c.HTTPSAddr, err))
	}
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	if c.ReusePort && !reusePortSupported {
		errs = append(errs, errors.New("reusePort: SO_REUSEPORT is not supported on this system"))
	}
	if _, err := ownAddrs(c.OwnListeners); err != nil {
		errs = append(errs, err)
	}
	if c.MaxHeaderBytes < 1024 {
		errs = append(errs, fmt.Errorf("maxHeaderBytes %d is below 1024", c.MaxHeaderBytes))
	}
	for name, d := range map[string]time.Duration{"readTimeout": c.ReadTimeout, "bodyTimeout": c.BodyTimeout,
		"writeTimeout": c.WriteTimeout, "idleTimeout": c.IdleTimeout, "originDialTimeout": c.OriginDialTimeout,
		"originTimeout": c.OriginTimeout, "originIdleTimeout": c.OriginIdleTimeout, "originKeepAlive": c.OriginKeepAlive, "syncWait": c.SyncWait,
		"flushInterval": c.FlushInterval, "passwordRefill": c.PasswordRefill, "shutdownTimeout": c.ShutdownTimeout,
		"upgradeIdleTimeout": c.UpgradeIdleTimeout, "upgradeMaxDuration": c.UpgradeMaxDuration} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", name, d))
		}
	}
	if c.MaxBodyBytes < 0 || c.MaxConnsPerIP < 0 || c.MaxProxyConns < 0 || c.Concurrency < 0 || c.OriginMaxConns < 0 || c.PasswordAttempts < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if err := c.Cache.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(msgs, "; "))
}

// ParseTrustedProxies parses a list of addresses and CIDR ranges (entries
// may themselves be comma-separated, as the command line gives them).
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range list {
		for e := range strings.SplitSeq(item, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			if p, err := netip.ParsePrefix(e); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(e)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q is not an address or CIDR range", e)
			}
			a = a.Unmap().WithZone("")
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}
