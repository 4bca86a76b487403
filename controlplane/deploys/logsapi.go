package deploys

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// Limits of GET /api/projects/{id}/logs.
const (
	// DefaultLogPage is the number of lines answered without limit.
	DefaultLogPage = 100
	// MaxLogPage is the largest limit.
	MaxLogPage = 1000
	// LogKeepAlive is the time between two comments on a quiet followed
	// stream (proxies close silent connections).
	LogKeepAlive = 15 * time.Second
)

// ProjectLogs is the answer of GET /api/projects/{id}/logs.
type ProjectLogs struct {
	// Lines are oldest first.
	Lines []ProjectLogLine `json:"lines"`
	// More is true when more lines match: before the first line (read
	// them with before=<first id>) or, with after, past the last one.
	More bool `json:"more"`
}

var validSources = map[string]bool{SourceBuild: true, SourceDeploy: true, SourceApp: true, SourceFunction: true}
var validStreams = map[string]bool{StreamStdout: true, StreamStderr: true, StreamPlatform: true}

// ParseLogQuery reads the filters of GET /api/projects/{id}/logs:
// deployment, source (a comma-separated list of build, deploy, app,
// function), stream (stdout, stderr, platform), since (RFC 3339 time or a
// duration before now such as 15m), after and before (line ids), limit
// (1..1000). now dates a duration.
func ParseLogQuery(v map[string][]string, now time.Time) (LogQuery, error) {
	get := func(k string) string {
		if s := v[k]; len(s) > 0 {
			return strings.TrimSpace(s[0])
		}
		return ""
	}
	q := LogQuery{Deployment: get("deployment"), Stream: get("stream"), Limit: DefaultLogPage}
	if len(q.Deployment) > 64 {
		return q, api.Invalid("deployment must be a deployment id (dpl_...)")
	}
	if s := get("source"); s != "" {
		for _, src := range strings.Split(s, ",") {
			src = strings.TrimSpace(src)
			if !validSources[src] {
				return q, api.Invalid("source %q is not a log source: use build, deploy, app or function (comma-separated)", truncate(src, 32))
			}
			q.Sources = append(q.Sources, src)
		}
	}
	if q.Stream != "" && !validStreams[q.Stream] {
		return q, api.Invalid("stream %q is not a stream: use stdout, stderr or platform", truncate(q.Stream, 32))
	}
	if s := get("since"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			q.Since = t
		} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
			q.Since = now.Add(-d)
		} else {
			return q, api.Invalid("since must be an RFC 3339 time (2026-01-02T15:04:05Z) or a duration such as 15m or 2h")
		}
	}
	for _, c := range []struct {
		name string
		dst  *int64
	}{{"after", &q.After}, {"before", &q.Before}} {
		if s := get(c.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return q, api.Invalid("%s must be a line id (a whole number from a previous answer)", c.name)
			}
			*c.dst = n
		}
	}
	if q.After > 0 && q.Before > 0 {
		return q, api.Invalid("after and before exclude each other: page forwards with after, backwards with before")
	}
	if s := get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLogPage {
			return q, api.Invalid("limit must be a whole number from 1 to %d", MaxLogPage)
		}
		q.Limit = n
	}
	return q, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Logs returns a project's log lines matching q; the caller must be
// allowed to read its logs.
func (s *Service) Logs(ctx context.Context, workspace, projectID string, q LogQuery) (ProjectLogs, error) {
	if _, err := s.cfg.Projects.Get(ctx, workspace, projectID); err != nil {
		return ProjectLogs{}, err
	}
	lines, more := s.logs.read(projectID, q)
	if lines == nil {
		lines = []ProjectLogLine{}
	}
	return ProjectLogs{Lines: lines, More: more}, nil
}

// Logs answers GET /api/projects/{id}/logs: the project's lines as JSON,
// or with follow=1 a stream of server-sent events (text/event-stream):
// the matching lines already kept (the newest limit, or those after the
// Last-Event-ID header or after), then every new one as it comes, each
// as "id: <line id>", "event: line" and "data: <line as JSON>"; a
// comment every 15 s keeps a quiet stream open.
func (h Handlers) Logs(w http.ResponseWriter, r *http.Request) error {
	pr := api.PrincipalFrom(r.Context())
	q, err := ParseLogQuery(r.URL.Query(), h.S.cfg.Clock.Now())
	if err != nil {
		return err
	}
	follow := r.URL.Query().Get("follow")
	if follow == "" || follow == "0" || follow == "false" {
		out, err := h.S.Logs(r.Context(), pr.WorkspaceID, r.PathValue("id"), q)
		return api.Reply(w, http.StatusOK, out, err)
	}
	if follow != "1" && follow != "true" {
		return api.Invalid("follow must be 1 (stream new lines as server-sent events) or omitted")
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return api.Invalid("Last-Event-ID must be the id of a line received before")
		}
		q.After, q.Before = n, 0
	}
	if q.Before > 0 {
		return api.Invalid("before pages backwards and cannot be followed: use after or Last-Event-ID")
	}
	return h.S.followLogs(r.Context(), w, pr.WorkspaceID, r.PathValue("id"), q)
}

// followLogs streams a project's log as server-sent events until the
// client leaves, the project is deleted or the platform stops.
func (s *Service) followLogs(ctx context.Context, w http.ResponseWriter, workspace, projectID string, q LogQuery) error {
	if _, err := s.cfg.Projects.Get(ctx, workspace, projectID); err != nil {
		return err
	}
	wake, stop := s.logs.subscribe(projectID)
	defer stop()
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	buf := []byte("retry: 2000\n\n")
	send := func(lines []ProjectLogLine) error {
		for _, l := range lines {
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, l.ID, 10)
			buf = append(buf, "\nevent: line\ndata: "...)
			raw, _ := json.Marshal(l)
			buf = append(buf, raw...)
			buf = append(buf, "\n\n"...)
			q.After = l.ID
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
		return rc.Flush()
	}
	lines, _ := s.logs.read(projectID, q)
	if err := send(lines); err != nil {
		return nil
	}
	q.Before = 0
	keep := time.NewTicker(LogKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.ctx.Done():
			return nil
		case <-keep.C:
			buf = append(buf, ": keep-alive\n\n"...)
			if err := send(nil); err != nil {
				return nil
			}
		case _, ok := <-wake:
			if !ok {
				buf = append(buf, "event: end\ndata: {\"reason\":\"project deleted\"}\n\n"...)
				_ = send(nil)
				return nil
			}
			for {
				page := q
				page.Limit = MaxLogPage
				if page.After == 0 {
					page.After = -1 // every line: the first ids start at 1
				}
				lines, more := s.logs.read(projectID, page)
				if err := send(lines); err != nil {
					return nil
				}
				if !more {
					break
				}
			}
		}
	}
}
