package media

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/controlplane/metering"
)

// Run runs the processing pool until ctx ends: cfg.Workers workers fed
// every video in processing (those left by a previous run too) when woken
// and every RescanEvery. With Config.NoWorkers it runs no worker (a job
// runner or the tests call Process) and waits for ctx's end. A video
// interrupted by ctx's end resumes at the next Run. With Config.Live it
// first starts the RTMP server (nginx), stopped when Run returns.
func (s *Service) Run(ctx context.Context) error {
	if s.live != nil && s.live.err == nil {
		if err := s.live.start(ctx, s.d.Logger); err != nil {
			return err
		}
		defer s.live.close()
	}
	if s.cfg.NoWorkers {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-s.queue:
					if err := s.Process(ctx, id); err != nil && ctx.Err() == nil {
						s.d.Logger.Error("media: process", "asset", id, "err", err)
					}
				}
			}
		})
	}
	s.wake()
	s.feed(ctx)
	wg.Wait()
	return nil
}

// wake makes the feeder look for work now.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// feed hands the pool every video in processing not being processed, when
// woken and every RescanEvery, until ctx ends.
func (s *Service) feed(ctx context.Context) {
	t := time.NewTicker(s.cfg.RescanEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		rs, err := queryRecords(ctx, s.d.DB, `status = ? AND kind = ? ORDER BY uploaded_at, id`, StatusProcessing, KindVideo)
		if err != nil {
			if ctx.Err() == nil {
				s.d.Logger.Error("media: scan", "err", err)
			}
			continue
		}
		for _, r := range rs {
			s.mu.Lock()
			_, busy := s.running[r.ID]
			s.mu.Unlock()
			if busy {
				continue
			}
			select {
			case s.queue <- r.ID:
			case <-ctx.Done():
				return
			}
		}
	}
}

// running is a video being processed.
type running struct {
	cancel context.CancelFunc
	// done is closed when Process returns.
	done chan struct{}
	// duration and encoded tell how far the encode has come (guarded by
	// Service.mu); duration is 0 until the file is probed.
	duration, encoded time.Duration
}

// Process turns an uploaded video into HLS. It is safe to call for any
// asset id: anything not waiting in processing (or already being
// processed here) is left alone. A file in a container that is not
// accepted, not a video, corrupt or over an hour fails with its reason; an
// interruption (shutdown, missing ffmpeg) leaves the video processing to be
// resumed, and the MaxAttempts-th start fails it as interrupted. A job
// runner may call it.
func (s *Service) Process(ctx context.Context, id string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &running{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if _, busy := s.running[id]; busy {
		s.mu.Unlock()
		return nil
	}
	s.running[id] = run
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
		close(run.done)
	}()

	r, err := getRecord(ctx, s.d.DB, id)
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Kind != KindVideo || r.Status != StatusProcessing {
		return nil
	}
	if s.toolsErr != nil { // not the file's fault: stays processing until ffmpeg is installed
		return fmt.Errorf("media: process %s: %w", id, s.toolsErr)
	}
	now := s.d.Clock.Now()
	if r.Attempts >= MaxAttempts {
		return s.fail(ctx, r, FailInterrupted, fmt.Sprintf("processing was interrupted %d times; upload the file again to a new video", r.Attempts))
	}
	// A new start encodes from the beginning: nothing plays until its
	// first segments are published again.
	if _, err := update(ctx, s.d.DB, id, map[string]any{"attempts": r.Attempts + 1, "updated_at": now, "live_since": "", "renditions": ""},
		"status = ?", StatusProcessing); err != nil {
		return err
	}
	dir := s.assetDir(id)
	if _, err := os.Stat(filepath.Join(dir, sourceFile)); err != nil {
		return s.fail(ctx, r, FailInterrupted, "the uploaded file was lost before processing finished; upload it again to a new video")
	}
	j, err := s.newJob(id)
	if err != nil {
		return err
	}
	defer j.close()
	tools := j.tools
	pr, err := tools.Probe(ctx, j.dir, sourceFile)
	if err != nil {
		return s.failWith(ctx, r, err)
	}
	if pr.Duration > MaxDuration {
		return s.fail(ctx, r, FailTooLong, fmt.Sprintf("the video is %s long; the limit is one hour per upload", pr.Duration.Round(time.Second)))
	}
	s.mu.Lock()
	run.duration = pr.Duration
	s.mu.Unlock()
	published := false
	out, err := tools.HLS(ctx, j.dir, sourceFile, hlsTmpDir, pr, transcode.Options{SegmentSeconds: s.cfg.SegmentSeconds,
		Progress: func(p transcode.Progress) {
			s.mu.Lock()
			run.encoded = p.Encoded
			s.mu.Unlock()
			if p.Published && !published {
				published = true
				s.publish(ctx, r, pr)
			}
		}})
	if err != nil {
		os.RemoveAll(filepath.Join(j.dir, hlsTmpDir))
		return s.failWith(ctx, r, err)
	}
	if err := tools.Poster(ctx, j.dir, sourceFile, filepath.Join(hlsTmpDir, transcode.PosterFile), pr); err != nil {
		os.RemoveAll(filepath.Join(j.dir, hlsTmpDir))
		return s.failWith(ctx, r, err)
	}
	tmp, err := j.output(hlsTmpDir)
	if err != nil {
		return err
	}
	final := filepath.Join(dir, hlsDir)
	os.RemoveAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("media: process %s: %w", id, err)
	}
	stored, err := transcode.DirSize(final)
	if err != nil {
		return err
	}
	names := make([]string, len(out.Renditions))
	for i, rg := range out.Renditions {
		names[i] = rg.Name()
	}
	now = s.d.Clock.Now()
	ok, err := update(ctx, s.d.DB, id, map[string]any{"status": StatusReady, "stored_bytes": stored, "duration_ms": pr.Duration.Milliseconds(),
		"width": pr.Width, "height": pr.Height, "renditions": strings.Join(names, ","), "ready_at": now, "updated_at": now,
		"stored_day": now.UTC().Format(time.DateOnly)}, "status = ?", StatusProcessing)
	if err != nil || !ok {
		os.RemoveAll(final)
		return err
	}
	os.Remove(filepath.Join(dir, sourceFile))
	s.meter(ctx, r, MetricMinutesProcessed, pr.Duration.Minutes(), now)
	s.meter(ctx, r, MetricStoredBytes, float64(stored), now)
	return nil
}

// publish makes a video being processed playable: its first segments of
// every rendition are written, and the playback URL serves the growing
// playlists from the job's output (see openPlayback). It records when
// (live_since, which for a video is when playback started to work) and the
// renditions, length and size, so the asset shows them while processing.
// A failure to record is logged: the encode goes on and the video is
// playable once ready.
func (s *Service) publish(ctx context.Context, r record, pr transcode.Probe) {
	rungs := transcode.Ladder(pr.Height)
	names := make([]string, len(rungs))
	for i, rg := range rungs {
		names[i] = rg.Name()
	}
	now := s.d.Clock.Now()
	ok, err := update(ctx, s.d.DB, r.ID, map[string]any{"live_since": now, "renditions": strings.Join(names, ","),
		"duration_ms": pr.Duration.Milliseconds(), "width": pr.Width, "height": pr.Height, "updated_at": now}, "status = ?", StatusProcessing)
	if err != nil {
		if ctx.Err() == nil {
			s.d.Logger.Error("media: publish", "asset", r.ID, "err", err)
		}
		return
	}
	if ok && s.onPlayable != nil {
		s.onPlayable(r.ID)
	}
}

// progress is how much of video id's encode is done, in percent (0-99),
// and whether it is being encoded here.
func (s *Service) progress(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run, ok := s.running[id]
	if !ok || run.duration <= 0 {
		return 0, false
	}
	return min(int(100*run.encoded/run.duration), 99), true
}

// failWith fails r for a transcode error: the file's fault becomes a
// failure with its reason; anything else (shutdown) is returned and the
// video stays processing. The reason names no host path.
func (s *Service) failWith(ctx context.Context, r record, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("media: process %s interrupted: %w", r.ID, err)
	case errors.Is(err, transcode.ErrFormat):
		s.d.Logger.Info("media: container refused", "asset", r.ID, "err", err)
		return s.fail(ctx, r, FailFormat, "the file is not a video container the platform reads: "+reason(err, transcode.ErrFormat)+
			"; upload the video file itself (MP4/MOV, Matroska/WebM, MPEG-TS, MPEG-PS, AVI, FLV, Ogg or GIF)")
	case errors.Is(err, transcode.ErrNotVideo):
		return s.fail(ctx, r, FailNotVideo, "the file is not a video: "+s.scrub(reason(err, transcode.ErrNotVideo)))
	case errors.Is(err, transcode.ErrCorrupt):
		return s.fail(ctx, r, FailCorrupt, "the video could not be decoded: "+s.scrub(reason(err, transcode.ErrCorrupt)))
	}
	return fmt.Errorf("media: process %s: %w", r.ID, err)
}

// reason is err's words after its sentinel's.
func reason(err, sentinel error) string {
	return strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}

// scrub takes the platform's directories out of a program's words: the
// programs are only told relative names, so this is a second guard.
func (s *Service) scrub(msg string) string {
	for _, d := range []string{s.cfg.WorkDir, s.cfg.Dir} {
		if d != "" {
			msg = strings.ReplaceAll(msg, d+string(filepath.Separator), "")
			msg = strings.ReplaceAll(msg, d, "")
		}
	}
	return msg
}

// fail records a failure and removes the video's files.
func (s *Service) fail(ctx context.Context, r record, code, msg string) error {
	now := s.d.Clock.Now()
	if _, err := update(ctx, s.d.DB, r.ID, map[string]any{"status": StatusFailed, "failure_code": code, "failure": msg, "updated_at": now},
		"status = ?", StatusProcessing); err != nil {
		return err
	}
	if err := s.removeAll(s.assetDir(r.ID)); err != nil {
		s.d.Logger.Error("media: remove a failed video's files", "asset", r.ID, "err", err)
	}
	return nil
}

// The metrics the area records (the lead may move them to metering's list).
const (
	// MetricMinutesProcessed is the length of each processed video, in minutes.
	MetricMinutesProcessed metering.Metric = "media_minutes_processed"
	// MetricStoredBytes is each ready video's stored bytes, recorded once
	// per UTC day it is held (a byte-day measure).
	MetricStoredBytes metering.Metric = "media_stored_bytes"
)

func (s *Service) meter(ctx context.Context, r record, m metering.Metric, q float64, at time.Time) {
	if s.d.Meter == nil {
		return
	}
	if err := s.d.Meter.Record(ctx, metering.Event{Workspace: r.Workspace, Project: r.Project, Metric: m, Quantity: q, At: at}); err != nil {
		s.d.Logger.Error("media: meter", "metric", m, "err", err)
	}
}

// RecordStorage records today's stored bytes of every ready video not yet
// recorded today (the control plane calls it daily; Process records the
// first day). It returns how many videos were recorded.
func (s *Service) RecordStorage(ctx context.Context) (int, error) {
	now := s.d.Clock.Now()
	day := now.UTC().Format(time.DateOnly)
	rs, err := queryRecords(ctx, s.d.DB, `status = ? AND stored_day <> ?`, StatusReady, day)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		ok, err := update(ctx, s.d.DB, r.ID, map[string]any{"stored_day": day}, "stored_day <> ?", day)
		if err != nil {
			return n, err
		}
		if ok {
			s.meter(ctx, r, MetricStoredBytes, float64(r.StoredBytes), now)
			n++
		}
	}
	return n, nil
}
