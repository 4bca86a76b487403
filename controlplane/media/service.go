// Package media is the media area: video assets uploaded once to a one-time
// URL, processed with Debian's ffmpeg into adaptive HLS (a 360p/720p ladder
// capped at the source height, a master playlist and a poster) and played
// from the platform; and live channels whose RTMP ingest is checked against
// a stream key. Processing runs in a bounded pool of low-priority workers;
// an interrupted job resumes at the next start or fails clearly.
package media

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/runtime/sandbox"
)

// Limits and defaults (the spec gives the hour; the rest are ours).
const (
	// MaxDuration is the longest video accepted (spec: 1 hour per upload).
	MaxDuration = time.Hour
	// DefaultMaxUploadBytes bounds one uploaded file (ours: 4 GiB).
	DefaultMaxUploadBytes int64 = 4 << 30
	// DefaultUploadTTL is how long an upload URL may be started (ours: 1 hour).
	DefaultUploadTTL = time.Hour
	// DefaultWorkers is how many videos are processed at once.
	DefaultWorkers = 1
	// MaxAttempts is how many times processing of one video is started
	// (a restart interrupts one) before it fails.
	MaxAttempts = 3
	// MaxNameLen bounds an asset name.
	MaxNameLen = 200
	// multipartSlack is the request body allowed beyond the file itself.
	multipartSlack = 1 << 20
)

// Config is the area's configuration.
type Config struct {
	// Dir holds the uploads and HLS output (DataDir/media).
	Dir string `json:"dir"`
	// PublicBaseURL is the API's base URL that upload URLs start with.
	PublicBaseURL string `json:"publicBaseUrl"`
	// PlaybackBaseURL is the base URL of playback URLs: the edge's
	// playback host (https://media.<apps domain>, see README.md "Playback
	// through the edge") when the platform runs an edge; PublicBaseURL
	// when empty.
	PlaybackBaseURL string `json:"playbackBaseUrl"`
	// Workers is how many videos are processed at once (DefaultWorkers when 0).
	Workers int `json:"workers"`
	// MaxUploadBytes bounds one uploaded file (DefaultMaxUploadBytes when 0).
	MaxUploadBytes int64 `json:"maxUploadBytes"`
	// UploadTTL is how long an upload URL may be started (DefaultUploadTTL when 0).
	UploadTTL time.Duration `json:"uploadTtl"`
	// SegmentSeconds is the HLS segment length, 2-6 (4 when 0).
	SegmentSeconds int `json:"segmentSeconds"`
	// RescanEvery is how often workers look for processing videos besides
	// being woken by an upload (30 s when 0).
	RescanEvery time.Duration `json:"rescanEvery"`
	// NoWorkers makes Run run no pool: a job runner calls Process (tests,
	// too).
	NoWorkers bool `json:"noWorkers"`
	// WorkDir is where videos are processed when Deps.Sandbox isolates:
	// one directory per job holding a link to its source and the output,
	// the only directory the sandboxed ffprobe and ffmpeg see. It must lie
	// outside the data directory (which sandboxed programs cannot reach),
	// every directory above it passable by others (o+x); it is created
	// 0711. Required with a sandbox, unused without.
	WorkDir string `json:"workDir"`
	// Live configures live channels (nil: live channels answer 503).
	Live *LiveConfig `json:"live,omitempty"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	c.PublicBaseURL = strings.TrimRight(c.PublicBaseURL, "/")
	if c.PlaybackBaseURL == "" {
		c.PlaybackBaseURL = c.PublicBaseURL
	}
	c.PlaybackBaseURL = strings.TrimRight(c.PlaybackBaseURL, "/")
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if c.UploadTTL <= 0 {
		c.UploadTTL = DefaultUploadTTL
	}
	if c.SegmentSeconds == 0 {
		c.SegmentSeconds = transcode.DefaultSegmentSeconds
	}
	if c.RescanEvery <= 0 {
		c.RescanEvery = 30 * time.Second
	}
}

// Validate checks a provisioned configuration.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("media: no directory")
	case c.PublicBaseURL == "":
		return errors.New("media: no public base URL for upload URLs")
	case c.SegmentSeconds < 2 || c.SegmentSeconds > 6:
		return fmt.Errorf("media: segment length %d s outside 2-6 s", c.SegmentSeconds)
	}
	return nil
}

// Projects is what the area needs of the projects area.
type Projects interface {
	// Get returns a project of the workspace (404 for another's or none).
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// RequireActive refuses changes to a project whose deletion failed.
	RequireActive(ctx context.Context, projectID string) error
}

// Deps are the core services the area is built on.
type Deps struct {
	// DB is the metadata database.
	DB *store.DB
	// Clock tells the time of records, URL expiry and usage.
	Clock clock.Clock
	// Audit records creates, live control and deletes.
	Audit *audit.Log
	// Meter receives stored bytes and minutes processed.
	Meter metering.Recorder
	// Projects says which projects exist and accept changes.
	Projects Projects
	// Plans tells each workspace's plan (media asset limits).
	Plans plans.Source
	// Sealer seals live stream keys so developers can read them back.
	Sealer *seal.Sealer
	// Jobs records stored bytes daily (JobRecordStorage).
	Jobs jobs.Queue
	// Logger receives what goes wrong in the background.
	Logger *slog.Logger
	// Sandbox runs ffprobe and ffmpeg (see JobSandbox): unprivileged, no
	// network, only the job's directory. nil or sandbox.None: they run as
	// children of the platform.
	Sandbox sandbox.Sandbox
}

// Service is the media area.
type Service struct {
	cfg   Config
	d     Deps
	tools transcode.Tools
	// toolsErr is why processing cannot run (ffmpeg missing).
	toolsErr error
	live     *liveServer

	kick  chan struct{}
	queue chan string

	// removeAll removes a directory tree (os.RemoveAll; tests make it fail).
	removeAll func(string) error

	// claimMu serialises claims of upload URLs with the receiving set.
	claimMu sync.Mutex
	mu      sync.Mutex
	// running maps a video being processed to its job.
	running map[string]*running
	// receiving are videos whose file is arriving now.
	receiving map[string]bool
	// onPlayable, when set (tests), is called when a video being
	// processed becomes playable, from the goroutine reading the encoder.
	onPlayable func(id string)

	closeOnce sync.Once
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil, "Jobs": d.Jobs != nil} {
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
var ErrNotConfigured = errors.New("media: missing dependencies")

// JobRecordStorage records the bytes media assets store (RecordStorage),
// once a day.
const JobRecordStorage = "media.storage"

// New builds the area, creating its directories, registers the daily
// storage record on d.Jobs and starts the live server when cfg.Live is set
// (nginx binds the ingest address that `platform serve` hands over while
// the control plane is built). The processing pool runs in Run.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sandboxed(d.Sandbox) && cfg.WorkDir == "" {
		return nil, errors.New("media: processing in a sandbox needs a work directory (Config.WorkDir) outside the data directory")
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
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "assets"), 0o755); err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	if sandboxed(d.Sandbox) {
		if err := os.MkdirAll(cfg.WorkDir, 0o711); err != nil {
			return nil, fmt.Errorf("media: work directory: %w", err)
		}
		if err := os.Chmod(cfg.WorkDir, 0o711); err != nil {
			return nil, fmt.Errorf("media: work directory: %w", err)
		}
	}
	s := &Service{cfg: cfg, d: d, kick: make(chan struct{}, 1), queue: make(chan string), removeAll: os.RemoveAll,
		running: map[string]*running{}, receiving: map[string]bool{}}
	s.tools, s.toolsErr = transcode.Find()
	if cfg.Live != nil {
		ls, err := newLiveServer(s, *cfg.Live)
		if err != nil {
			return nil, err
		}
		s.live = ls
	}
	d.Jobs.Register(JobRecordStorage, func(ctx context.Context, _ jobs.Job) error { _, err := s.RecordStorage(ctx); return err },
		jobs.KindOptions{MaxAttempts: 5, Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}})
	d.Jobs.Every(JobRecordStorage, 24*time.Hour)
	return s, nil
}

// Close stops the live server if Run left it running. Call it after Run
// has returned (videos it interrupted resume at the next Run).
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.live != nil {
			err = s.live.close()
		}
	})
	return err
}

// assetDir is where a video's files live.
func (s *Service) assetDir(id string) string { return filepath.Join(s.cfg.Dir, "assets", id) }

// MaxUploadBody is the request-body limit of the upload route.
func (s *Service) MaxUploadBody() int64 { return s.cfg.MaxUploadBytes + multipartSlack }
