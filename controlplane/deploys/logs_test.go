package deploys_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/plans"
)

type logLine struct {
	ID           int64  `json:"id"`
	DeploymentID string `json:"deploymentId"`
	Source       string `json:"source"`
	Stream       string `json:"stream"`
	Line         string `json:"line"`
}

type logsAnswer struct {
	Lines []logLine `json:"lines"`
	More  bool      `json:"more"`
}

func logsText(ls []logLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Source + " " + l.Stream + ": " + l.Line + "\n")
	}
	return b.String()
}

// TestProjectLogs reads a project's log (deploy lines of every
// deployment), its refusals, and follows it as server-sent events while a
// deploy runs.
func TestProjectLogs(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Logged")
	d1 := s.deploy(t, s.push(t, map[string]string{"index.html": "<h1>one</h1>"}))
	path := "/api/projects/" + s.project + "/logs"

	var out logsAnswer
	env.Owner.Must(200, "GET", path, nil).JSON(t, &out)
	if !strings.Contains(logsText(out.Lines), "deploy platform: live at https://logged.apps.test") || out.Lines[0].DeploymentID != d1.Deployment.ID {
		t.Fatalf("project log:\n%s", logsText(out.Lines))
	}

	dev := env.Member("dev@example.com", "developer")
	viewer := env.Member("viewer@example.com", "viewer")
	readOnly := env.NewKey("read_only", "")
	for _, c := range []struct {
		name   string
		client *cptest.Client
		query  string
		status int
	}{
		{"developer", dev, "", 200},
		{"filtered", env.Owner, "?source=deploy&deployment=" + d1.Deployment.ID + "&limit=2", 200},
		{"viewer refused", viewer, "", 403},
		{"read-only key refused", readOnly, "", 403},
		{"bad source", env.Owner, "?source=kernel", 400},
		{"bad limit", env.Owner, "?limit=5000", 400},
		{"bad follow", env.Owner, "?follow=maybe", 400},
		{"follow backwards", env.Owner, "?follow=1&before=3", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.client.Must(c.status, "GET", path+c.query, nil)
		})
	}
	env.Owner.Must(404, "GET", "/api/projects/prj_nope/logs", nil)
	var page logsAnswer
	env.Owner.Must(200, "GET", path+"?limit=2", nil).JSON(t, &page)
	if len(page.Lines) != 2 || !page.More {
		t.Fatalf("page of 2: %+v", page)
	}
	var before logsAnswer
	env.Owner.Must(200, "GET", path+"?limit=1&before="+itoa(page.Lines[0].ID), nil).JSON(t, &before)
	if len(before.Lines) != 1 || before.Lines[0].ID != page.Lines[0].ID-1 {
		t.Fatalf("page before %d: %+v", page.Lines[0].ID, before)
	}

	// Follow: the kept lines after the cursor, then the next deploy's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last := out.Lines[len(out.Lines)-1].ID
	req, _ := http.NewRequestWithContext(ctx, "GET", env.Server.URL+path+"?follow=1&source=deploy", nil)
	req.Header.Set("Authorization", "Bearer "+cptest.OwnerKey)
	req.Header.Set("Last-Event-ID", itoa(last))
	resp, err := env.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("follow: %d %s", resp.StatusCode, ct)
	}
	d2 := s.deploy(t, s.push(t, map[string]string{"index.html": "<h1>two</h1>"}))
	sc := bufio.NewScanner(resp.Body)
	var got []logLine
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var l logLine
		if err := json.Unmarshal([]byte(data), &l); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		if l.ID <= last {
			t.Fatalf("line %d sent again after Last-Event-ID %d", l.ID, last)
		}
		got = append(got, l)
		if strings.HasPrefix(l.Line, "live at") {
			break
		}
	}
	if len(got) == 0 || got[0].DeploymentID != d2.Deployment.ID || !strings.HasPrefix(got[0].Line, "deploying commit 2") {
		t.Fatalf("followed:\n%s (err %v)", logsText(got), sc.Err())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestProjectLogAfterRestart: the deploy lines of a project's latest
// deployments are read back from the store by a restarted service.
func TestProjectLogAfterRestart(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Kept")
	d := s.deploy(t, s.push(t, map[string]string{"index.html": "x"}))
	cp := env.CP
	restarted, err := deploys.New(context.Background(), deploys.Config{}, deploys.Deps{DB: cp.DB, Blobs: cp.Blobs(), Clock: env.Clock,
		Audit: cp.Audit, Meter: cp.Meter, Projects: cp.Projects, Repos: cp.Repos(), Settings: settingsOf{cp}, Pub: cp.EdgeSync()})
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	var ws string
	if err := cp.DB.QueryRow(`SELECT workspace_id FROM deployments WHERE id = ?`, d.Deployment.ID).Scan(&ws); err != nil {
		t.Fatal(err)
	}
	out, err := restarted.Logs(context.Background(), ws, s.project, deploys.LogQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	for _, l := range out.Lines {
		lines = append(lines, logLine{ID: l.ID, DeploymentID: l.DeploymentID, Source: l.Source, Stream: l.Stream, Line: l.Line})
	}
	text := logsText(lines)
	if !strings.Contains(text, "deploy platform: deploying commit 1") || !strings.Contains(text, "deploy platform: live at") {
		t.Fatalf("after a restart:\n%s", text)
	}
	// Past the retention the lines are gone.
	env.Clock.Advance(deploys.DefaultLogRetention + time.Minute)
	if out, _ := restarted.Logs(context.Background(), ws, s.project, deploys.LogQuery{Limit: 100}); len(out.Lines) != 0 {
		t.Fatalf("kept past the retention: %+v", out.Lines)
	}
}

// TestLogRetentionByPlan: a project's log is kept as long as its
// workspace's plan says (plans.Limits.LogRetentionHours), read again when
// the plan changes.
func TestLogRetentionByPlan(t *testing.T) {
	for _, c := range []struct {
		plan plans.Name
		keep time.Duration
	}{
		{plans.Hobby, 24 * time.Hour},
		{plans.Pro, 72 * time.Hour},
		{plans.Team, 7 * 24 * time.Hour},
	} {
		t.Run(string(c.plan), func(t *testing.T) {
			if got := time.Duration(plans.Of(c.plan).LogRetentionHours) * time.Hour; got != c.keep {
				t.Fatalf("plan table: %v", got)
			}
			env := newCP(t, cptest.Options{Plan: c.plan})
			s := newSite(t, env, "Logged")
			s.deploy(t, s.push(t, map[string]string{"index.html": "x"}))
			lines := func() int {
				var out logsAnswer
				env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/logs", nil).JSON(t, &out)
				return len(out.Lines)
			}
			env.Clock.Advance(c.keep - time.Minute)
			if n := lines(); n == 0 {
				t.Fatalf("nothing kept %v after the deploy", c.keep-time.Minute)
			}
			env.Clock.Advance(2 * time.Minute)
			if n := lines(); n != 0 {
				t.Fatalf("%d line(s) kept past %v", n, c.keep)
			}
		})
	}
}
