package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// options are the command line of CONTRACT.md; every flag also reads an
// environment variable, and the flag wins when both are set.
type options struct {
	data           string
	apiAddr        string
	httpAddr       string
	httpsAddr      string
	adminAddr      string
	appsDomain     string
	geoip          string
	trustedProxies string
	bootstrapKey   string
	ownerEmail     string
	plan           string
	signup         string
	defaultPlan    string
	controlplane   string
	edgeToken      string
	logLevel       string
	acmeEmail      string
	acmeDirectory  string
	cacheBytes     string
	aiConfig       string
	payProcessor   string
	stripeKey      string
	stripeBaseURL  string
	accessLog      string
	rtmpAddr       string
	mediaHost      string
	storageHost    string
	nodeID         string
	nodeURL        string
	rtmpsAddr      string
	blobs          string
	store          string
	sealKeyFile    string
	appSandbox     string
	runtimeDir     string
	smtpURL        string
	mailFrom       string
	mailBounceAddr string
	mailBounceDom  string
	dnsResolver    string
	edgeAddrs      string
	s3Host         string
	appIdle        string
	appCPUMillis   string
	appMemory      string
	appCgroups     string
	appOutbound    string
	publicURL      string
	// allowPrivate lets app/function origins and webhook URLs be on
	// loopback, private or link-local addresses.
	allowPrivate bool
	// reusePort binds the edge's listeners with SO_REUSEPORT, so a new
	// process can take over the ports while the old one drains.
	reusePort bool
	// set names the flags given on the command line or in the
	// environment (the rest are at their defaults).
	set map[string]bool
}

type flagDef struct {
	name, env, def, usage string
	dst                   *string
}

func (o *options) defs() []flagDef {
	return []flagDef{
		{"data", "PLATFORM_DATA", "./data", "everything the process stores", &o.data},
		{"api-addr", "PLATFORM_API_ADDR", "127.0.0.1:7070", "control-plane REST API (/api/...)", &o.apiAddr},
		{"public-url", "PLATFORM_PUBLIC_URL", "", "the address people reach the control plane at (https://host behind the edge or a proxy): checkout, upload, storage and sign-in links start with it (default http://<api-addr>)", &o.publicURL},
		{"http-addr", "PLATFORM_HTTP_ADDR", ":8000", "edge plain HTTP: redirects to HTTPS", &o.httpAddr},
		{"https-addr", "PLATFORM_HTTPS_ADDR", ":8443", "edge HTTPS over TCP, and HTTP/3 over UDP on the same port", &o.httpsAddr},
		{"admin-addr", "PLATFORM_ADMIN_ADDR", "127.0.0.1:9090", "/healthz, /readyz, /metrics, /debug/pprof/ (profiles and runtime traces: keep it on loopback or a private network)", &o.adminAddr},
		{"apps-domain", "PLATFORM_APPS_DOMAIN", "localhost", "a project answers at https://<slug>.DOMAIN", &o.appsDomain},
		{"geoip", "PLATFORM_GEOIP", "", "country database (MMDB); default DIR/geo/country.mmdb", &o.geoip},
		{"trusted-proxies", "PLATFORM_TRUSTED_PROXIES", "", "comma-separated CIDRs whose X-Forwarded-For names the client", &o.trustedProxies},
		{"bootstrap-key", "PLATFORM_BOOTSTRAP_KEY", "", "the first owner's full-access key, on an empty data dir (generated and printed once when empty)", &o.bootstrapKey},
		{"owner-email", "PLATFORM_OWNER_EMAIL", "owner@example.com", "the first owner's e-mail, on an empty data dir", &o.ownerEmail},
		{"plan", "PLATFORM_PLAN", "hobby", "the first workspace's plan: hobby, pro, team, scale or enterprise", &o.plan},
		{"signup", "PLATFORM_SIGNUP", "closed", "who may sign up (POST /api/signup): closed (invitations only), open (anyone; the workspace waits for e-mail verification) or domains:example.com,example.org", &o.signup},
		{"default-plan", "PLATFORM_DEFAULT_PLAN", "hobby", "the plan new workspaces (sign-ups, POST /api/workspaces) start on", &o.defaultPlan},
		{"controlplane", "PLATFORM_CONTROLPLANE", "", "for platform edge: where to pull configuration", &o.controlplane},
		{"edge-token", "PLATFORM_EDGE_TOKEN", "", "for platform edge: its credential", &o.edgeToken},
		{"log-level", "PLATFORM_LOG_LEVEL", "info", "debug, info, warn or error", &o.logLevel},
		{"acme-email", "PLATFORM_ACME_EMAIL", "", "edge: obtain certificates by ACME (Let's Encrypt) with this contact instead of the local CA", &o.acmeEmail},
		{"acme-directory", "PLATFORM_ACME_DIRECTORY", "", "edge: ACME directory URL (default Let's Encrypt)", &o.acmeDirectory},
		{"cache-bytes", "PLATFORM_CACHE_BYTES", "268435456", "edge: memory bound of the response cache, in bytes", &o.cacheBytes},
		{"ai-config", "PLATFORM_AI_CONFIG", "", "AI providers and model catalogue overrides (JSON, CONTRACT.md)", &o.aiConfig},
		{"payments-processor", "PLATFORM_PAYMENTS_PROCESSOR", "test", "payments: test (built-in hosted page, test cards) or stripe", &o.payProcessor},
		{"stripe-key", "STRIPE_SECRET_KEY", "", "payments: the Stripe secret key, with --payments-processor stripe", &o.stripeKey},
		{"stripe-base-url", "PLATFORM_STRIPE_BASE_URL", "", "payments: Stripe API base URL (default Stripe's; stripe-mock in tests)", &o.stripeBaseURL},
		{"node-id", "PLATFORM_NODE_ID", "", "this control-plane replica's name among several: a-z 0-9 - _ (default derived once, kept in DIR/node-id)", &o.nodeID},
		{"node-url", "PLATFORM_NODE_URL", "", "where the other control-plane replicas reach this one's API (http://host:port); set on every replica sharing a --store (SCALING.md)", &o.nodeURL},
		{"media-host", "PLATFORM_MEDIA_HOST", "", "media: the edge's video playback host (default media.<apps-domain>); - plays from the API address only", &o.mediaHost},
		{"rtmp-addr", "PLATFORM_RTMP_ADDR", "127.0.0.1:1935", "media: live ingest (RTMP, Debian nginx + libnginx-mod-rtmp); empty turns live channels off", &o.rtmpAddr},
		{"rtmps-addr", "PLATFORM_RTMPS_ADDR", "127.0.0.1:1936", "media: RTMPS live ingest, TLS terminated by the platform with the local CA's certificate and forwarded to --rtmp-addr (empty: off)", &o.rtmpsAddr},
		{"app-sandbox", "PLATFORM_APP_SANDBOX", "", "run deployed apps, workers and functions: bwrap (bubblewrap + prlimit, as root), none (no isolation: development only) or empty (off: such deploys answer 503)", &o.appSandbox},
		{"runtime-dir", "PLATFORM_RUNTIME_DIR", "", "where running apps' directories live, outside --data (default <data>.runtime)", &o.runtimeDir},
		{"smtp-url", "PLATFORM_SMTP_URL", "", "mail: the SMTP relay, smtp://user:pass@host:587 (STARTTLS when offered; ?starttls=required) or smtps://user:pass@host:465; prefer the environment variable (the password); empty writes messages to DIR/mail", &o.smtpURL},
		{"mail-from", "PLATFORM_MAIL_FROM", "", "mail: the platform's sender, Name <address> (default Platform <noreply@<apps-domain>>); publish SPF and DKIM for it at the relay", &o.mailFrom},
		{"mail-bounce-domain", "PLATFORM_MAIL_BOUNCE_DOMAIN", "", "mail: the domain of every message's envelope sender bounces+<token>@<domain> (default: the domain of --mail-from); its MX must reach --mail-bounce-addr", &o.mailBounceDom},
		{"mail-bounce-addr", "PLATFORM_MAIL_BOUNCE_ADDR", "", "mail: host:port of the SMTP listener that takes bounces (RFC 3464) and complaints (RFC 5965) for the messages sent; empty: off", &o.mailBounceAddr},
		{"storage-host", "PLATFORM_STORAGE_HOST", "", "storage buckets: the edge's host serving public objects from its cache and signed URLs (default storage.<apps-domain> for serve); - serves them from the API address only", &o.storageHost},
		{"s3-host", "PLATFORM_S3_HOST", "", "storage buckets: a host name at whose root the S3-compatible API answers, for clients whose endpoint takes no path (minio-go, mc); /s3 on the API address always answers", &o.s3Host},
		{"dns-resolver", "PLATFORM_DNS_RESOLVER", "", "the DNS server (host:port) sending and custom domains are looked up at; empty uses the system's resolver", &o.dnsResolver},
		{"edge-addresses", "PLATFORM_EDGE_ADDRESSES", "", "custom domains: the edges' public IPv4 and IPv6 addresses, comma-separated, that apex domains' A and AAAA records point at (empty: apexes must resolve to what <slug>.<apps-domain> resolves to)", &o.edgeAddrs},
		{"app-idle-timeout", "PLATFORM_APP_IDLE_TIMEOUT", "15m", "stop an app with no connection for this long; the next request wakes it (0s: never)", &o.appIdle},
		{"app-cpu-millis", "PLATFORM_APP_CPU_MILLIS", "1000", "CPU of each sandboxed app in thousandths of a core (bwrap with cgroups)", &o.appCPUMillis},
		{"app-memory-bytes", "PLATFORM_APP_MEMORY_BYTES", "536870912", "memory of each sandboxed app: all of it with cgroups, RLIMIT_DATA without", &o.appMemory},
		{"app-cgroups", "PLATFORM_APP_CGROUPS", "auto", "per-app cgroups for the CPU and memory limits: auto, on (required) or off (prlimit only)", &o.appCgroups},
		{"app-outbound", "PLATFORM_APP_OUTBOUND", "auto", "outbound network for sandboxed apps through slirp4netns: auto, on (required) or off", &o.appOutbound},
		{"store", "PLATFORM_STORE", "", "the control plane's metadata database: a SQLite path (default DIR/platform.db) or postgres://user:pass@host/db", &o.store},
		{"seal-key-file", "PLATFORM_SEAL_KEY_FILE", "", "the 32-byte key sealing secrets at rest (default DIR/keys/seal.key, created on first start); replicas on one --store share it", &o.sealKeyFile},
		{"blobs", "PLATFORM_BLOBS", "", "where deployed files and repo snapshots live: a directory, or s3://BUCKET/PREFIX?endpoint=URL&path_style=true (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile or the instance role); default DIR/blobs", &o.blobs},
		{"access-log", "PLATFORM_ACCESS_LOG", "", "edge: one JSON line per request to this file, or - for stdout (off when empty)", &o.accessLog},
	}
}

// parse reads args and the environment.
func (o *options) parse(cmd string, args []string) error {
	fs := flag.NewFlagSet("platform "+cmd, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	defs := o.defs()
	o.set = map[string]bool{}
	for _, d := range defs {
		def := d.def
		if v, ok := os.LookupEnv(d.env); ok {
			def = v
			o.set[d.name] = true
		}
		fs.StringVar(d.dst, d.name, def, d.usage+" (env "+d.env+")")
	}
	allowDef := false
	if v, ok := os.LookupEnv("PLATFORM_ALLOW_PRIVATE_NETWORKS"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("PLATFORM_ALLOW_PRIVATE_NETWORKS=%q: want true or false", v)
		}
		allowDef = b
	}
	fs.BoolVar(&o.allowPrivate, "allow-private-networks", allowDef,
		"let app/function origins and webhook URLs be on loopback, private or link-local addresses (env PLATFORM_ALLOW_PRIVATE_NETWORKS)")
	fs.BoolVar(&o.reusePort, "reuse-port", os.Getenv("PLATFORM_REUSE_PORT") == "true",
		"edge: bind with SO_REUSEPORT so a new process takes over while this one drains (env PLATFORM_REUSE_PORT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.geoip == "" {
		o.geoip = strings.TrimRight(o.data, "/") + "/geo/country.mmdb"
	}
	return nil
}
