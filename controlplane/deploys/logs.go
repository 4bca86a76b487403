package deploys

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Log sources: where a project log line comes from.
const (
	// SourceBuild is the build step's output (install and build commands).
	SourceBuild = "build"
	// SourceDeploy is the deploy log (what the platform did).
	SourceDeploy = "deploy"
	// SourceApp is a server app's or worker program's output.
	SourceApp = "app"
	// SourceFunction is a function's stderr and failed invocations.
	SourceFunction = "function"
)

// Streams of a project log line.
const (
	StreamStdout   = "stdout"
	StreamStderr   = "stderr"
	StreamPlatform = "platform"
)

// Retention of the project logs.
const (
	// DefaultLogBytes bounds each project's kept log lines (their text).
	DefaultLogBytes = 2 << 20
	// DefaultLogRetention is how long a project log line is kept.
	DefaultLogRetention = 24 * time.Hour
	// maxLogLine cuts longer lines.
	maxLogLine = 4 << 10
	// hydrateDeployments is how many of a project's latest deployments'
	// deploy logs are read back from the store when its log is first used.
	hydrateDeployments = 20
)

// ProjectLogLine is one line of a project's log.
type ProjectLogLine struct {
	// ID orders the lines of a project (the cursor of after/before and the
	// event id of a followed stream); it restarts with the platform.
	ID           int64     `json:"id"`
	At           time.Time `json:"at"`
	DeploymentID string    `json:"deploymentId"`
	// Source is build, deploy, app or function.
	Source string `json:"source"`
	// Stream is stdout, stderr or platform (the platform's own notes).
	Stream string `json:"stream"`
	Line   string `json:"line"`
}

// projectLog is one project's kept lines and followers.
type projectLog struct {
	lines []ProjectLogLine
	bytes int
	next  int64
	subs  map[chan struct{}]struct{}
	// limit and keep are the project's bounds (its plan's), read at
	// checked and again after limitsEvery.
	limit   int
	keep    time.Duration
	checked time.Time
}

// limitsEvery is how often a project's log bounds are read again (a plan
// change applies within it).
const limitsEvery = 5 * time.Minute

// logHub keeps every project's recent log lines in memory, bounded by
// bytes and age per project, and wakes followers on each new line.
type logHub struct {
	mu       sync.Mutex
	projects map[string]*projectLog
	limit    int
	keep     time.Duration
	now      func() time.Time
	// hydrate reads a project's recent deploy log lines back from the
	// store the first time its log is used (nil: none).
	hydrate func(project string) []ProjectLogLine
	// limits returns a project's bounds (nil: limit and keep for all).
	limits func(project string) (int, time.Duration)
}

func newLogHub(limit int, keep time.Duration, now func() time.Time) *logHub {
	return &logHub{projects: map[string]*projectLog{}, limit: limit, keep: keep, now: now}
}

// bounds returns a project's bounds, read outside the lock.
func (h *logHub) bounds(project string) (int, time.Duration) {
	if h.limits == nil {
		return h.limit, h.keep
	}
	return h.limits(project)
}

// ensure creates the project's log, read back from the store (hydrate)
// outside the lock, the first time it is used, and reads its bounds again
// every limitsEvery.
func (h *logHub) ensure(project string) {
	h.mu.Lock()
	pl := h.projects[project]
	stale := pl != nil && h.now().Sub(pl.checked) >= limitsEvery
	h.mu.Unlock()
	if stale {
		limit, keep := h.bounds(project)
		h.mu.Lock()
		pl.limit, pl.keep, pl.checked = limit, keep, h.now()
		h.mu.Unlock()
	}
	if pl != nil {
		return
	}
	limit, keep := h.bounds(project)
	var old []ProjectLogLine
	if h.hydrate != nil {
		old = h.hydrate(project)
		sort.SliceStable(old, func(i, j int) bool { return old[i].At.Before(old[j].At) })
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.projects[project] != nil {
		return
	}
	pl = &projectLog{subs: map[chan struct{}]struct{}{}, limit: limit, keep: keep, checked: h.now()}
	h.projects[project] = pl
	for _, l := range old {
		h.push(pl, l)
	}
}

// get returns the project's log; under mu, after ensure.
func (h *logHub) get(project string) *projectLog {
	pl := h.projects[project]
	if pl == nil {
		pl = &projectLog{subs: map[chan struct{}]struct{}{}, limit: h.limit, keep: h.keep, checked: h.now()}
		h.projects[project] = pl
	}
	return pl
}

// push appends a line and applies the bounds; under mu.
func (h *logHub) push(pl *projectLog, l ProjectLogLine) {
	if len(l.Line) > maxLogLine {
		l.Line = l.Line[:maxLogLine]
	}
	pl.next++
	l.ID = pl.next
	pl.lines = append(pl.lines, l)
	pl.bytes += len(l.Line)
	h.trim(pl)
}

// trim drops the oldest lines past the byte budget or the age; under mu.
func (h *logHub) trim(pl *projectLog) {
	cut := h.now().Add(-pl.keep)
	n := 0
	for n < len(pl.lines) && (pl.bytes > pl.limit || pl.lines[n].At.Before(cut)) {
		pl.bytes -= len(pl.lines[n].Line)
		n++
	}
	if n > 0 {
		clear(pl.lines[:n])
		pl.lines = pl.lines[n:]
	}
}

// add records a line of a project and wakes its followers.
func (h *logHub) add(project string, l ProjectLogLine) {
	if project == "" {
		return
	}
	if l.At.IsZero() {
		l.At = h.now()
	}
	h.ensure(project)
	h.mu.Lock()
	pl := h.get(project)
	h.push(pl, l)
	for ch := range pl.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

// LogQuery filters a project's log.
type LogQuery struct {
	// Deployment keeps the lines of one deployment.
	Deployment string
	// Sources keeps the lines of these sources (all when empty).
	Sources []string
	// Stream keeps the lines of one stream.
	Stream string
	// Since keeps lines at or after it.
	Since time.Time
	// After keeps lines with an id above it (oldest first); Before keeps
	// lines with an id below it (the newest of them). Neither: the newest.
	After, Before int64
	// Limit is the most lines answered.
	Limit int
}

func (q LogQuery) match(l ProjectLogLine) bool {
	if q.Deployment != "" && l.DeploymentID != q.Deployment {
		return false
	}
	if q.Stream != "" && l.Stream != q.Stream {
		return false
	}
	if !q.Since.IsZero() && l.At.Before(q.Since) {
		return false
	}
	if q.After > 0 && l.ID <= q.After {
		return false
	}
	if q.Before > 0 && l.ID >= q.Before {
		return false
	}
	if len(q.Sources) == 0 {
		return true
	}
	for _, s := range q.Sources {
		if s == l.Source {
			return true
		}
	}
	return false
}

// read answers a query, oldest first, and whether more lines match past
// the limit (after the last one with After, before the first otherwise).
func (h *logHub) read(project string, q LogQuery) ([]ProjectLogLine, bool) {
	h.ensure(project)
	h.mu.Lock()
	defer h.mu.Unlock()
	pl := h.get(project)
	h.trim(pl)
	var out []ProjectLogLine
	more := false
	if q.After != 0 { // forwards (-1: from the oldest)
		for _, l := range pl.lines {
			if !q.match(l) {
				continue
			}
			if len(out) == q.Limit {
				more = true
				break
			}
			out = append(out, l)
		}
		return out, more
	}
	for i := len(pl.lines) - 1; i >= 0; i-- {
		l := pl.lines[i]
		if !q.match(l) {
			continue
		}
		if len(out) == q.Limit {
			more = true
			break
		}
		out = append(out, l)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, more
}

// subscribe returns a channel woken (coalesced) on every new line of the
// project and a function ending the subscription.
func (h *logHub) subscribe(project string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.ensure(project)
	h.mu.Lock()
	h.get(project).subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		if pl := h.projects[project]; pl != nil {
			delete(pl.subs, ch)
		}
		h.mu.Unlock()
	}
}

// drop forgets a project's log (the project was deleted).
func (h *logHub) drop(project string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pl := h.projects[project]
	if pl == nil {
		return
	}
	for ch := range pl.subs {
		close(ch)
	}
	delete(h.projects, project)
}

// logLimits returns a project's log bounds: its workspace's plan's.
func (s *Service) logLimits(project string) (int, time.Duration) {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	var ws string
	err := s.cfg.DB.QueryRowContext(ctx, `SELECT workspace_id FROM deployments WHERE project_id = ? LIMIT 1`, project).Scan(&ws)
	if err != nil {
		return s.cfg.LogBytes, s.cfg.LogRetention
	}
	l := plans.Of(s.cfg.Plans.Plan(ctx, ws))
	return l.LogBytes, time.Duration(l.LogRetentionHours) * time.Hour
}

// hydrateFromStore reads the deploy logs of a project's latest
// deployments within the retention back from the store.
func (s *Service) hydrateFromStore(project string) []ProjectLogLine {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	_, keep := s.logs.bounds(project)
	since := s.cfg.Clock.Now().Add(-keep)
	rows, err := s.cfg.DB.QueryContext(ctx, `SELECT l.deployment_id, l.at, l.line FROM deployment_logs l
		WHERE l.deployment_id IN (SELECT id FROM deployments WHERE project_id = ? ORDER BY created_at DESC LIMIT ?)
		ORDER BY l.deployment_id, l.seq`, project, hydrateDeployments)
	if err != nil {
		s.cfg.Logger.Warn("deploys: read back deploy logs", "project", project, "err", err)
		return nil
	}
	defer rows.Close()
	var out []ProjectLogLine
	for rows.Next() {
		var l ProjectLogLine
		var at string
		if err := rows.Scan(&l.DeploymentID, &at, &l.Line); err != nil {
			s.cfg.Logger.Warn("deploys: read back deploy logs", "project", project, "err", err)
			return nil
		}
		l.At = store.ParseTime(at)
		if l.At.Before(since) {
			continue
		}
		l.Source, l.Stream = SourceDeploy, StreamPlatform
		if len(l.Line) > len(buildPrefix) && l.Line[:len(buildPrefix)] == buildPrefix {
			l.Source, l.Stream, l.Line = SourceBuild, StreamStdout, l.Line[len(buildPrefix):]
		}
		out = append(out, l)
	}
	return out
}

// buildPrefix marks a build output line in the stored deploy log.
const buildPrefix = "build | "

// logDeploy records a deploy log line of a deployment in the project log
// (the store keeps it too: the caller wrote it there).
func (s *Service) logDeploy(project, deployment string, at time.Time, line string) {
	src, stream := SourceDeploy, StreamPlatform
	if len(line) > len(buildPrefix) && line[:len(buildPrefix)] == buildPrefix {
		src, line = SourceBuild, line[len(buildPrefix):]
	}
	s.logs.add(project, ProjectLogLine{At: at, DeploymentID: deployment, Source: src, Stream: stream, Line: line})
}
