package media

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Asset is a video or live channel as the API shows it.
type Asset struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	// Failure says why a video failed (status failed).
	Failure *Failure `json:"failure,omitempty"`
	// Size is the uploaded file's size in bytes (once it has arrived).
	Size int64 `json:"size,omitempty"`
	// StoredBytes is what the processed video occupies (HLS and poster).
	StoredBytes int64 `json:"storedBytes,omitempty"`
	// Duration is the video's length in seconds (once playable).
	Duration float64 `json:"duration,omitempty"`
	Width    int     `json:"width,omitempty"`
	Height   int     `json:"height,omitempty"`
	// Renditions are the HLS ladder's rungs that play now, e.g. ["360p",
	// "720p"]: every rung once the video is playable.
	Renditions []string `json:"renditions,omitempty" doc:"the HLS renditions playbackUrl plays now, e.g. [\"360p\", \"720p\"]; while processing, those whose first segments are published (playable true)"`
	// Playable tells that PlaybackURL plays (videos): once ready, and
	// while processing as soon as the first segments of every rendition
	// are encoded; the playlists then grow as the encode goes on.
	Playable bool `json:"playable,omitempty" doc:"videos: playbackUrl plays now. True once ready, and while processing as soon as the first segments are encoded: the playlists are then HLS EVENT playlists that grow as segments land (players start at the beginning) and become VOD playlists when the video is ready"`
	// PlayableAt is when the video became playable.
	PlayableAt time.Time `json:"playableAt,omitzero" doc:"videos: when playbackUrl started to play"`
	// Progress is how much of the video is encoded, in percent, while
	// it is processed here.
	Progress int `json:"progress,omitempty" doc:"videos being processed: the percentage of the video encoded so far (0-99)"`
	// PlaybackURL is the HLS master playlist (playable videos, live channels).
	PlaybackURL string `json:"playbackUrl,omitempty" doc:"the HLS master playlist: a video's once it is playable (see playable), a live channel's"`
	// PosterURL is a still of a ready video.
	PosterURL string `json:"posterUrl,omitempty"`
	// IngestURL and StreamKey are a live channel's publishing target;
	// shown to developers and above only.
	IngestURL string    `json:"ingestUrl,omitempty"`
	StreamKey string    `json:"streamKey,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Failure is why a video could not be processed.
type Failure struct {
	// Code is unsupported_format, not_a_video, corrupt, too_long or interrupted.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// UploadURL is a one-time upload target.
type UploadURL struct {
	URL       string    `json:"uploadUrl"`
	ExpiresAt time.Time `json:"uploadUrlExpiresAt"`
}

// view renders a record; secrets only when the caller may see them.
func (s *Service) view(r record, secrets bool) Asset {
	a := Asset{ID: r.ID, ProjectID: r.Project, Name: r.Name, Kind: r.Kind, Status: r.Status, Size: r.SourceBytes,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.FailureCode != "" {
		a.Failure = &Failure{Code: r.FailureCode, Message: r.Failure}
	}
	switch r.Kind {
	case KindVideo:
		if r.Status == StatusProcessing {
			a.Progress, _ = s.progress(r.ID)
		}
		playable := r.Status == StatusReady || r.Status == StatusProcessing && !r.LiveSince.IsZero()
		if playable {
			a.Playable, a.PlayableAt = true, r.LiveSince
			if a.PlayableAt.IsZero() { // ready without having been published first (a short video)
				a.PlayableAt = r.ReadyAt
			}
			a.Width, a.Height = r.Width, r.Height
			a.Duration = float64(r.DurationMS) / 1000
			if r.Renditions != "" {
				a.Renditions = strings.Split(r.Renditions, ",")
			}
			a.PlaybackURL = s.cfg.PlaybackBaseURL + "/media/" + r.ID + "/" + transcode.MasterPlaylist
		}
		if r.Status == StatusReady {
			a.StoredBytes = r.StoredBytes
			a.PosterURL = s.cfg.PlaybackBaseURL + "/media/" + r.ID + "/" + transcode.PosterFile
		}
	case KindLive:
		a.PlaybackURL = s.cfg.PlaybackBaseURL + "/media/" + r.ID + "/" + livePlaylist
		if secrets {
			a.IngestURL = s.ingestURL()
			if key, err := s.openStreamKey(r); err == nil {
				a.StreamKey = key
			} else {
				s.d.Logger.Error("media: open stream key", "asset", r.ID, "err", err)
			}
		}
	}
	return a
}

// CreateRequest is the body of POST /api/projects/{id}/media.
type CreateRequest struct {
	Name string `json:"name"`
	// Kind is video or live; image and audio answer 501.
	Kind string `json:"kind"`
}

// Created is the answer of a create: the upload URL of a video, or the
// ingest URL and stream key of a live channel.
type Created struct {
	Asset     Asset     `json:"asset"`
	UploadURL string    `json:"uploadUrl,omitempty"`
	ExpiresAt time.Time `json:"uploadUrlExpiresAt,omitzero"`
	IngestURL string    `json:"ingestUrl,omitempty"`
	StreamKey string    `json:"streamKey,omitempty"`
}

func validName(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", api.Invalid("name is required")
	case !utf8.ValidString(v):
		return "", api.Invalid("name is not valid UTF-8")
	case utf8.RuneCountInString(v) > MaxNameLen:
		return "", api.Invalid("name is at most %d characters", MaxNameLen)
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", api.Invalid("name must not hold control characters")
	}
	return v, nil
}

// Create makes a video waiting for its file, or a live channel (idle) with
// a stream key. The plan's asset limit is checked in the same transaction
// as the insert: a refusal creates nothing.
func (s *Service) Create(ctx context.Context, p *auth.Principal, projectID string, req CreateRequest) (Created, error) {
	name, err := validName(req.Name)
	if err != nil {
		return Created{}, err
	}
	kind := strings.TrimSpace(req.Kind)
	switch kind {
	case KindVideo, KindLive:
	case "image", "audio":
		return Created{}, api.E(api.KindNotImplemented, "kind_not_supported", "media of kind %s is not supported: use video or live", kind)
	case "":
		return Created{}, api.Invalid("kind is required: video or live")
	default:
		return Created{}, api.Invalid("kind must be video or live, not %q", kind)
	}
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return Created{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, projectID); err != nil {
		return Created{}, err
	}
	if kind == KindLive {
		if err := s.liveAvailable(ctx); err != nil {
			return Created{}, err
		}
	}
	now := s.d.Clock.Now()
	r := record{ID: store.NewID("med"), Workspace: p.WorkspaceID, Project: projectID, Name: name, Kind: kind, CreatedAt: now, UpdatedAt: now}
	var out Created
	if kind == KindVideo {
		r.Status = StatusPendingUpload
		tok := newToken()
		r.UploadTokenHash, r.UploadExpiresAt = hashToken(tok), now.Add(s.cfg.UploadTTL)
		out.UploadURL, out.ExpiresAt = s.uploadURL(tok), r.UploadExpiresAt
	} else {
		r.Status = StatusIdle
		key, sealed, hash, err := s.newStreamKey(r.ID)
		if err != nil {
			return Created{}, err
		}
		r.StreamKeySealed, r.StreamKeyHash = sealed, hash
		out.IngestURL, out.StreamKey = s.ingestURL(), key
	}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		n, err := countWorkspace(ctx, tx, p.WorkspaceID)
		if err != nil {
			return err
		}
		if err := planLimit(plan, n, n+1, kind); err != nil {
			return err
		}
		if err := insertRecord(ctx, tx, r); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "media.create", Category: audit.CategoryData,
			TargetType: "media", TargetID: r.ID, ProjectID: projectID, Summary: fmt.Sprintf("created %s %s", kindLabel(kind), name)})
	})
	if err != nil {
		return Created{}, err
	}
	out.Asset = s.view(r, true)
	return out, nil
}

func kindLabel(kind string) string {
	if kind == KindLive {
		return "live channel"
	}
	return "video"
}

// planLimit refuses (402 plan_limit with required_plan) when a workspace
// holding `held` assets would hold `want` on plan: on create want is
// held+1; on asking for an upload URL or going live want is held, so a
// workspace still holding assets from a richer plan is refused.
func planLimit(plan plans.Name, held, want int, kind string) error {
	limit := assetLimit(plan)
	if plans.Allows(limit, want) {
		return nil
	}
	if limit == 0 {
		return plans.LimitError(plan, assetLimit, held, want, "the %s plan has no videos or live channels: move to a larger plan to use media", plan).
			With("kind", kind)
	}
	return plans.LimitError(plan, assetLimit, held, want,
		"the %s plan holds %d videos and live channels and the workspace has %d: delete some or move to a larger plan", plan, limit, held).With("kind", kind)
}

// assetLimit is how many videos and live channels a plan holds.
func assetLimit(p plans.Name) int { return plans.Of(p).MediaAssets }

// load returns an asset of the caller's workspace after checking op
// against its project (404 for another workspace's).
func (s *Service) load(ctx context.Context, p *auth.Principal, id string, op auth.Op) (record, error) {
	r, err := getRecord(ctx, s.d.DB, id)
	if err != nil {
		return r, err
	}
	if p == nil || r.Workspace != p.WorkspaceID {
		return record{}, errNotFound
	}
	if err := auth.Authorize(p, op, r.Project); err != nil {
		return record{}, err
	}
	return r, nil
}

// canSeeSecrets tells whether p may see stream keys and upload URLs of project.
func canSeeSecrets(p *auth.Principal, project string) bool {
	return auth.Authorize(p, auth.OpMediaSecrets, project) == nil
}

// Get returns an asset; its ingest URL and stream key only for callers
// allowed media secrets.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (Asset, error) {
	r, err := s.load(ctx, p, id, auth.OpMediaRead)
	if err != nil {
		return Asset{}, err
	}
	return s.view(r, canSeeSecrets(p, r.Project)), nil
}

// List returns a project's assets, oldest first.
func (s *Service) List(ctx context.Context, p *auth.Principal, projectID string) ([]Asset, error) {
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return nil, err
	}
	rs, err := queryRecords(ctx, s.d.DB, `project_id = ? AND workspace_id = ? ORDER BY created_at, id`, projectID, p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	secrets := canSeeSecrets(p, projectID)
	out := make([]Asset, 0, len(rs))
	for _, r := range rs {
		out = append(out, s.view(r, secrets))
	}
	return out, nil
}

// NewUploadURL issues a fresh one-time upload URL for a video still
// waiting for its file; the previous URL stops working. Once a file has
// arrived (or while one is arriving) no URL is issued.
func (s *Service) NewUploadURL(ctx context.Context, p *auth.Principal, id string) (Asset, UploadURL, error) {
	r, err := s.load(ctx, p, id, auth.OpMediaSecrets)
	if err != nil {
		return Asset{}, UploadURL{}, err
	}
	if r.Kind != KindVideo {
		return Asset{}, UploadURL{}, api.Conflict("not_a_video", "a live channel takes no uploads: publish to its ingest URL")
	}
	if err := s.d.Projects.RequireActive(ctx, r.Project); err != nil {
		return Asset{}, UploadURL{}, err
	}
	s.mu.Lock()
	busy := s.receiving[id]
	s.mu.Unlock()
	if busy {
		return Asset{}, UploadURL{}, api.Conflict("upload_in_progress", "a file is arriving at this video's upload URL now")
	}
	now := s.d.Clock.Now()
	tok := newToken()
	u := UploadURL{URL: s.uploadURL(tok), ExpiresAt: now.Add(s.cfg.UploadTTL)}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		n, err := countWorkspace(ctx, tx, p.WorkspaceID)
		if err != nil {
			return err
		}
		if err := planLimit(plan, n, n, KindVideo); err != nil {
			return err
		}
		ok, err := update(ctx, tx, id, map[string]any{"upload_token_hash": hashToken(tok), "upload_expires_at": u.ExpiresAt,
			"upload_claimed_at": "", "updated_at": now}, "status = ?", StatusPendingUpload)
		if err != nil {
			return err
		}
		if !ok {
			return api.Conflict("file_received", "this video's file has already arrived: no new upload URL is issued")
		}
		return nil
	})
	if err != nil {
		return Asset{}, UploadURL{}, err
	}
	r.UpdatedAt = now
	return s.view(r, true), u, nil
}

// newToken returns an unguessable upload token (256 bits).
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken is what is stored of a token.
func hashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

func (s *Service) uploadURL(tok string) string { return s.cfg.PublicBaseURL + "/media/uploads/" + tok }
