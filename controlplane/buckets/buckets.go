// Package buckets is object storage for a project's apps, as Cloudflare R2
// and Supabase Storage offer it: buckets (public or private) holding
// objects put and got by key with a content type and user metadata, listed
// by prefix with a delimiter and a continuation token, signed URLs for
// private objects, multipart uploads for large ones, and an S3-compatible
// surface (AWS Signature Version 4 with access keys issued per project) for
// the calls S3 clients make most.
//
// Object bytes live in the content-addressed blob store (controlplane/blobs,
// a directory or an S3-compatible bucket): an object names its blob, or the
// blobs of its parts, by SHA-256, so the area scales out the way deployed
// files do. The area is a blobs.RefSource: the daily blob cleanup keeps what
// its rows name and frees what they no longer name.
package buckets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits and defaults of Config (ours: the specification names none; the
// sizes are S3's).
const (
	// MaxKeyBytes bounds an object key, in bytes of UTF-8 (S3's limit).
	MaxKeyBytes = 1024
	// MaxMetadataBytes bounds an object's user metadata: names and values
	// together (S3's limit).
	MaxMetadataBytes = 2048
	// MaxHeaderValue bounds Content-Type, Cache-Control,
	// Content-Disposition and Content-Encoding.
	MaxHeaderValue = 1024
	// DefaultMaxPutBytes bounds an object sent in one request (S3: 5 GiB).
	DefaultMaxPutBytes int64 = 5 << 30
	// DefaultMaxObjectBytes bounds an object made by a multipart upload
	// (S3: 5 TiB).
	DefaultMaxObjectBytes int64 = 5 << 40
	// DefaultMinPartBytes is the smallest part but the last (S3: 5 MiB).
	DefaultMinPartBytes int64 = 5 << 20
	// DefaultMaxPartBytes bounds one part (S3: 5 GiB).
	DefaultMaxPartBytes int64 = 5 << 30
	// MaxParts is the highest part number (S3's).
	MaxParts = 10_000
	// DefaultUploadTTL is how long an unfinished multipart upload and its
	// parts are kept.
	DefaultUploadTTL = 7 * 24 * time.Hour
	// DefaultBucketsPerProject bounds a project's buckets.
	DefaultBucketsPerProject = 100
	// DefaultKeysPerProject bounds a project's S3 access keys.
	DefaultKeysPerProject = 50
	// DefaultSignedURLTTL is a signed URL's life when none is asked.
	DefaultSignedURLTTL = time.Hour
	// MaxSignedURLTTL is the longest life of a signed URL or of an S3
	// presigned URL (S3: seven days).
	MaxSignedURLTTL = 7 * 24 * time.Hour
	// DefaultMaxClockSkew is how far a signed S3 request's time may be
	// from the server's (S3: 15 minutes).
	DefaultMaxClockSkew = 15 * time.Minute
	// DefaultRegion is the region GetBucketLocation answers; requests
	// signed for any region are accepted.
	DefaultRegion = "us-east-1"
	// DefaultSweepEvery is how often expired multipart uploads are removed.
	DefaultSweepEvery = time.Hour
	// DefaultPublicCacheControl is the Cache-Control of a public object
	// that was stored without one: a shared cache (the edge) keeps it a
	// minute, so an overwritten or deleted object is stale at most that
	// long.
	DefaultPublicCacheControl = "public, max-age=60"
)

// DefaultBytesPerPlan is how many bytes a workspace's buckets may hold
// (objects and unfinished uploads' parts together), by plan (ours).
var DefaultBytesPerPlan = map[plans.Name]int64{
	plans.Hobby:      1 * plans.GB,
	plans.Pro:        100 * plans.GB,
	plans.Team:       250 * plans.GB,
	plans.Scale:      1000 * plans.GB,
	plans.Enterprise: 1000 * plans.GB,
}

// Config is the area's configuration; the zero value works.
type Config struct {
	// PublicBaseURL is where public objects and signed URLs are served
	// (GET {PublicBaseURL}/storage/{bucketId}/{key}): the API's address,
	// or the edge's storage host when one serves them through its cache.
	// Empty: URLs are relative ("/storage/...").
	PublicBaseURL string `json:"publicBaseUrl,omitempty"`
	// Region is what GetBucketLocation answers (DefaultRegion).
	Region string `json:"region,omitempty"`
	// MaxPutBytes bounds an object sent in one request (DefaultMaxPutBytes).
	MaxPutBytes int64 `json:"maxPutBytes,omitempty"`
	// MaxObjectBytes bounds an object made by a multipart upload
	// (DefaultMaxObjectBytes).
	MaxObjectBytes int64 `json:"maxObjectBytes,omitempty"`
	// MinPartBytes is the smallest part but the last (DefaultMinPartBytes).
	MinPartBytes int64 `json:"minPartBytes,omitempty"`
	// MaxPartBytes bounds one part (DefaultMaxPartBytes).
	MaxPartBytes int64 `json:"maxPartBytes,omitempty"`
	// UploadTTL is how long an unfinished multipart upload is kept
	// (DefaultUploadTTL).
	UploadTTL time.Duration `json:"uploadTtl,omitempty"`
	// BucketsPerProject bounds a project's buckets (DefaultBucketsPerProject).
	BucketsPerProject int `json:"bucketsPerProject,omitempty"`
	// KeysPerProject bounds a project's S3 access keys (DefaultKeysPerProject).
	KeysPerProject int `json:"keysPerProject,omitempty"`
	// BytesPerPlan is the per-plan byte cap of a workspace's buckets
	// (DefaultBytesPerPlan for plans it does not name; plans.Unlimited:
	// none).
	BytesPerPlan map[plans.Name]int64 `json:"bytesPerPlan,omitempty"`
	// MaxClockSkew bounds the difference between a signed S3 request's
	// time and the server's (DefaultMaxClockSkew).
	MaxClockSkew time.Duration `json:"maxClockSkew,omitempty"`
	// SweepEvery is how often expired uploads are removed
	// (DefaultSweepEvery).
	SweepEvery time.Duration `json:"sweepEvery,omitempty"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	c.PublicBaseURL = strings.TrimRight(c.PublicBaseURL, "/")
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.MaxPutBytes <= 0 {
		c.MaxPutBytes = DefaultMaxPutBytes
	}
	if c.MaxObjectBytes <= 0 {
		c.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if c.MinPartBytes <= 0 {
		c.MinPartBytes = DefaultMinPartBytes
	}
	if c.MaxPartBytes <= 0 {
		c.MaxPartBytes = DefaultMaxPartBytes
	}
	if c.UploadTTL <= 0 {
		c.UploadTTL = DefaultUploadTTL
	}
	if c.BucketsPerProject <= 0 {
		c.BucketsPerProject = DefaultBucketsPerProject
	}
	if c.KeysPerProject <= 0 {
		c.KeysPerProject = DefaultKeysPerProject
	}
	if c.MaxClockSkew <= 0 {
		c.MaxClockSkew = DefaultMaxClockSkew
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
}

// Validate checks a provisioned Config; it changes nothing.
func (c *Config) Validate() error {
	if c.PublicBaseURL != "" {
		u, err := url.Parse(c.PublicBaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("buckets: public base URL %q must be http(s)://host[:port][/path]", c.PublicBaseURL)
		}
	}
	if !validRegion(c.Region) {
		return fmt.Errorf("buckets: region %q must be 1-32 of a-z, 0-9 and -", c.Region)
	}
	if c.MinPartBytes > c.MaxPartBytes {
		return fmt.Errorf("buckets: the smallest part (%d bytes) is larger than the largest (%d)", c.MinPartBytes, c.MaxPartBytes)
	}
	if c.MaxPutBytes > c.MaxObjectBytes {
		return fmt.Errorf("buckets: one request's object (%d bytes) may not be larger than any object (%d)", c.MaxPutBytes, c.MaxObjectBytes)
	}
	return nil
}

// bytesCap is the plan's byte cap (plans.Unlimited: none).
func (c *Config) bytesCap(p plans.Name) int64 {
	return plans.Lookup(c.BytesPerPlan, DefaultBytesPerPlan, p)
}

// Projects is what the area needs of projects (*projects.Service).
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Deps are the services the area is built on.
type Deps struct {
	DB *store.DB
	// Blobs holds the objects' bytes.
	Blobs blobs.Backend
	// Sealer seals the buckets' signing keys and the access keys' secrets.
	Sealer   *seal.Sealer
	Projects Projects
	Plans    plans.Source
	// Jobs runs the expiry of unfinished uploads (none when nil: call
	// Sweep).
	Jobs jobs.Queue
	// Clock is the time source (clock.System when nil).
	Clock clock.Clock
	// Audit records buckets and access keys created and deleted (audit.New
	// over DB when nil).
	Audit *audit.Log
	// Logger receives failures, never object bytes or secrets
	// (slog.Default when nil).
	Logger *slog.Logger
	// Edge publishes which buckets are public to the edges, in the
	// transaction that changes it (edgesync.Service); nil when no edge
	// caches /storage.
	Edge Publisher
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Blobs": d.Blobs != nil, "Sealer": d.Sealer != nil,
		"Projects": d.Projects != nil, "Plans": d.Plans != nil} {
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
var ErrNotConfigured = errors.New("buckets: missing dependencies")

// JobSweep is the kind of the job that removes expired uploads.
const JobSweep = "buckets.uploads.expire"

// Service is the storage buckets area.
type Service struct {
	cfg Config
	d   Deps
	m   *metrics
}

// New builds the area and, with Deps.Jobs, registers the hourly removal of
// expired multipart uploads.
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
	s := &Service{cfg: cfg, d: d, m: newMetrics()}
	if d.Jobs != nil {
		d.Jobs.Register(JobSweep, func(ctx context.Context, _ jobs.Job) error { _, err := s.Sweep(ctx); return err },
			jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute, 10 * time.Minute}, Timeout: 10 * time.Minute})
		d.Jobs.Every(JobSweep, cfg.SweepEvery)
	}
	return s, nil
}

// Config returns the provisioned configuration.
func (s *Service) Config() Config { return s.cfg }

// MaxPutBytes is the largest object one request may carry: the REST
// route's body limit.
func (s *Service) MaxPutBytes() int64 { return s.cfg.MaxPutBytes }

// MaxPartBytes is the largest part: the REST part route's body limit.
func (s *Service) MaxPartBytes() int64 { return s.cfg.MaxPartBytes }

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }
