package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Log sources of a project's log.
const (
	LogSourceBuild    = "build"
	LogSourceDeploy   = "deploy"
	LogSourceApp      = "app"
	LogSourceFunction = "function"
)

// ProjectLogLine is one line of a project's log.
type ProjectLogLine struct {
	// ID orders the lines of a project (the cursor of After and Before).
	ID           int64     `json:"id"`
	At           time.Time `json:"at"`
	DeploymentID string    `json:"deploymentId"`
	// Source is build, deploy, app or function.
	Source string `json:"source"`
	// Stream is stdout, stderr or platform.
	Stream string `json:"stream"`
	Line   string `json:"line"`
}

// ProjectLogs is a page of a project's log, oldest line first.
type ProjectLogs struct {
	Lines []ProjectLogLine `json:"lines"`
	// More: more lines match before the first (or, with After, past the
	// last).
	More bool `json:"more"`
}

// LogsOptions filter a project's log; the zero value is its newest 100
// lines.
type LogsOptions struct {
	// Deployment keeps one deployment's lines.
	Deployment string
	// Sources keeps lines of these sources (LogSource*).
	Sources []string
	// Stream keeps one stream: stdout, stderr or platform.
	Stream string
	// Since is an RFC 3339 time or a duration before now ("15m").
	Since string
	// After and Before are line ids (paging forwards or backwards).
	After, Before int64
	// Limit is the most lines answered (1..1000; 100 when 0).
	Limit int
}

func (o LogsOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("deployment", o.Deployment)
	set("source", strings.Join(o.Sources, ","))
	set("stream", o.Stream)
	set("since", o.Since)
	if o.After > 0 {
		q.Set("after", strconv.FormatInt(o.After, 10))
	}
	if o.Before > 0 {
		q.Set("before", strconv.FormatInt(o.Before, 10))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// Logs reads a page of a project's log (GET /api/projects/{id}/logs).
func (c *Client) Logs(ctx context.Context, projectID string, o LogsOptions) (ProjectLogs, error) {
	var out ProjectLogs
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/projects/" + esc(projectID) + "/logs", query: o.query()}, &out)
}

// FollowRetry is the wait before FollowLogs reconnects a dropped stream.
const FollowRetry = 2 * time.Second

// FollowLogs streams a project's log (server-sent events of
// GET /api/projects/{id}/logs?follow=1): the kept lines o selects, then
// each new one as it comes, to fn in order. A dropped connection is
// resumed after FollowRetry from the last line received (Last-Event-ID);
// a refusal of the API, an error of fn, the project's deletion or ctx end
// it (ctx's end returns nil).
func (c *Client) FollowLogs(ctx context.Context, projectID string, o LogsOptions, fn func(ProjectLogLine) error) error {
	hc := *c.http()
	hc.Timeout = 0 // a followed stream lasts as long as ctx
	last := o.After
	for {
		err := c.followOnce(ctx, &hc, projectID, o, &last, fn)
		if ctx.Err() != nil {
			return nil
		}
		var te *TransportError
		if err == nil || !errors.As(err, &te) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(FollowRetry):
		}
	}
}

// errStreamEnded is the server's end of a followed stream.
var errStreamEnded = errors.New("client: the log stream ended")

func (c *Client) followOnce(ctx context.Context, hc *http.Client, projectID string, o LogsOptions, last *int64, fn func(ProjectLogLine) error) error {
	q := o.query()
	q.Set("follow", "1")
	q.Del("after")
	path := "/api/projects/" + esc(projectID) + "/logs"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("client: follow logs: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if *last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*last, 10))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &TransportError{Method: http.MethodGet, URL: c.BaseURL + path, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return decodeError(resp.StatusCode, data)
	}
	err = readEvents(resp.Body, func(event, data string) error {
		switch event {
		case "line":
			var l ProjectLogLine
			if err := json.Unmarshal([]byte(data), &l); err != nil {
				return fmt.Errorf("client: follow logs: a line is not the expected JSON: %w", err)
			}
			*last = l.ID
			return fn(l)
		case "end":
			return errStreamEnded
		}
		return nil
	})
	if errors.Is(err, errStreamEnded) {
		return nil
	}
	var re *readError
	if errors.As(err, &re) || errors.Is(err, io.EOF) {
		return &TransportError{Method: http.MethodGet, URL: c.BaseURL + path, Err: err}
	}
	return err
}

// readError is a failed read of the stream (the connection dropped).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// readEvents reads a text/event-stream body and calls fn with each
// event's name ("message" when none) and data; comments and other fields
// are skipped.
func readEvents(r io.Reader, fn func(event, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	event, data := "", []string(nil)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				if event == "" {
					event = "message"
				}
				if err := fn(event, strings.Join(data, "\n")); err != nil {
					return err
				}
			}
			event, data = "", nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "event":
			event = v
		case "data":
			data = append(data, v)
		}
	}
	if err := sc.Err(); err != nil {
		return &readError{err}
	}
	return io.EOF
}
