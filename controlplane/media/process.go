package media

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/controlplane/metering"
)

// startPool starts the feeder and cfg.Workers workers. The feeder hands
// out every video in processing (those left by a previous run too) when
// woken and every RescanEvery.
func (s *Service) startPool() {
	s.wg.Add(1 + s.cfg.Workers)
	go s.feed()
	for range s.cfg.Workers {
		go func() {
			defer s.wg.Done()
			for {
				select {
				case <-s.ctx.Done():
					return
				case id := <-s.queue:
					if err := s.Process(s.ctx, id); err != nil && s.ctx.Err() == nil {
						s.d.Logger.Error("media: process", "asset", id, "err", err)
					}
				}
			}
		}()
	}
	s.wake()
}

// wake makes the feeder look for work now.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Service) feed() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.RescanEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		rs, err := queryRecords(s.ctx, s.d.DB, `status = ? AND kind = ? ORDER BY uploaded_at, id`, StatusProcessing, KindVideo)
		if err != nil {
			if s.ctx.Err() == nil {
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
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// Process turns an uploaded video into HLS. It is safe to call for any
// asset id: anything not waiting in processing (or already being
// processed here) is left alone. A file that is not a video, is corrupt or
// runs over an hour fails with its reason; an interruption (shutdown,
// missing ffmpeg) leaves the video processing to be resumed, and the
// MaxAttempts-th start fails it as interrupted. A job runner may call it.
func (s *Service) Process(ctx context.Context, id string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if _, busy := s.running[id]; busy {
		s.mu.Unlock()
		return nil
	}
	s.running[id] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
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
	if _, err := update(ctx, s.d.DB, id, map[string]any{"attempts": r.Attempts + 1, "updated_at": now}, "status = ?", StatusProcessing); err != nil {
		return err
	}
	dir := s.assetDir(id)
	src := filepath.Join(dir, "source")
	if _, err := os.Stat(src); err != nil {
		return s.fail(ctx, r, FailInterrupted, "the uploaded file was lost before processing finished; upload it again to a new video")
	}
	tools := s.tools
	pr, err := tools.Probe(ctx, src)
	if err != nil {
		return s.failWith(ctx, r, err)
	}
	if pr.Duration > MaxDuration {
		return s.fail(ctx, r, FailTooLong, fmt.Sprintf("the video is %s long; the limit is one hour per upload", pr.Duration.Round(time.Second)))
	}
	tmp := filepath.Join(dir, "hls.tmp")
	out, err := tools.HLS(ctx, src, tmp, pr, transcode.Options{SegmentSeconds: s.cfg.SegmentSeconds})
	if err != nil {
		os.RemoveAll(tmp)
		return s.failWith(ctx, r, err)
	}
	if err := tools.Poster(ctx, src, filepath.Join(tmp, transcode.PosterFile), pr); err != nil {
		os.RemoveAll(tmp)
		return s.failWith(ctx, r, err)
	}
	final := filepath.Join(dir, "hls")
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
	os.Remove(src)
	s.meter(ctx, r, MetricMinutesProcessed, pr.Duration.Minutes(), now)
	s.meter(ctx, r, MetricStoredBytes, float64(stored), now)
	return nil
}

// failWith fails r for a transcode error: the file's fault becomes a
// failure with its reason; anything else (shutdown) is returned and the
// video stays processing.
func (s *Service) failWith(ctx context.Context, r record, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("media: process %s interrupted: %w", r.ID, err)
	case errors.Is(err, transcode.ErrNotVideo):
		return s.fail(ctx, r, FailNotVideo, "the file is not a video: "+strings.TrimPrefix(err.Error(), transcode.ErrNotVideo.Error()+": "))
	case errors.Is(err, transcode.ErrCorrupt):
		return s.fail(ctx, r, FailCorrupt, "the video could not be decoded: "+strings.TrimPrefix(err.Error(), transcode.ErrCorrupt.Error()+": "))
	}
	return fmt.Errorf("media: process %s: %w", r.ID, err)
}

// fail records a failure and removes the video's files.
func (s *Service) fail(ctx context.Context, r record, code, msg string) error {
	now := s.d.Clock.Now()
	if _, err := update(ctx, s.d.DB, r.ID, map[string]any{"status": StatusFailed, "failure_code": code, "failure": msg, "updated_at": now},
		"status = ?", StatusProcessing); err != nil {
		return err
	}
	os.RemoveAll(s.assetDir(r.ID))
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
