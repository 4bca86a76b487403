package edgesync_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

type edge struct {
	t     *testing.T
	env   *cptest.Env
	token string
}

func newEdge(t *testing.T, env *cptest.Env) *edge {
	tok, err := env.CP.EdgeSync().EnsureLocalToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &edge{t: t, env: env, token: tok}
}

func (e *edge) do(method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.env.Server.URL+path, bytes.NewReader(body))
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (e *edge) config(after int64, wait int) (int, snapshot.Snapshot, http.Header) {
	e.t.Helper()
	resp, body := e.do("GET", fmt.Sprintf("%s?after=%d&wait=%d", snapshot.ConfigPath, after, wait), nil)
	var s snapshot.Snapshot
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(body, &s); err != nil {
			e.t.Fatal(err)
		}
	}
	return resp.StatusCode, s, resp.Header
}

func TestLongPoll(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			e := newEdge(t, env)
			status, s, h := e.config(0, 30)
			if status != 200 || s.Version < 1 || s.AppsDomain != "apps.test" || len(s.SessionKey) != 32 || h.Get(snapshot.VersionHeader) != strconv.FormatInt(s.Version, 10) {
				t.Fatalf("first fetch: %d %+v", status, s)
			}
			// Nothing changes: 304 after the wait.
			start := time.Now()
			if status, _, h := e.config(s.Version, 1); status != 304 || h.Get(snapshot.VersionHeader) != strconv.FormatInt(s.Version, 10) {
				t.Fatalf("unchanged: %d", status)
			}
			if time.Since(start) < 900*time.Millisecond {
				t.Fatal("304 came before the wait")
			}
			// A change wakes a waiting poll at once.
			done := make(chan snapshot.Snapshot, 1)
			go func() {
				_, s2, _ := e.config(s.Version, 30)
				done <- s2
			}()
			// The change is made once the poll is waiting (the service's own
			// signal), so the test proves the wake-up, not a timeout.
			<-env.CP.EdgeSync().Waiting()
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockAiCrawlers": true})
			select {
			case s2 := <-done:
				if s2.Version <= s.Version || !s2.Workspaces[0].Shield.BlockAICrawlers {
					t.Fatalf("woken with %+v", s2)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a change did not wake the long-poll")
			}
			// An edge from another data directory (a larger version) gets the snapshot.
			if status, _, _ := e.config(s.Version+1000, 1); status != 200 {
				t.Fatalf("larger version: %d", status)
			}
			// gzip when asked.
			resp, body := e.do("GET", snapshot.ConfigPath, nil, "Accept-Encoding", "gzip")
			if resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("no gzip: %v", resp.Header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if plain, err := io.ReadAll(zr); err != nil || !json.Valid(plain) {
				t.Fatalf("gzip body: %v", err)
			}
		})
	}
}

func TestEdgeAuth(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			e := newEdge(t, env)
			remote, tok, err := edgesync.MintToken(context.Background(), env.CP.DB, "edge-1", env.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			// A running control plane re-reads its tokens on a miss at most once a
			// second (of its clock).
			env.Clock.Advance(1100 * time.Millisecond)
			tests := []struct {
				name   string
				token  string
				status int
			}{
				{"local token", e.token, 200},
				{"token minted outside the service", remote, 200},
				{"no token", "", 401},
				{"an API key", cptest.OwnerKey, 401},
				{"wrong token", snapshot.TokenPrefix + "aaaaaaaaaaaaaaaa", 401},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					c := &edge{t: t, env: env, token: tt.token}
					if resp, body := c.do("GET", snapshot.ConfigPath, nil); resp.StatusCode != tt.status {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
					if resp, _ := c.do("POST", snapshot.CountsPath, []byte(`{"batch":"x","counts":[]}`)); tt.status == 401 && resp.StatusCode != 401 {
						t.Fatalf("counts: %d", resp.StatusCode)
					}
				})
			}
			if err := env.CP.EdgeSync().RevokeToken(context.Background(), tok.ID); err != nil {
				t.Fatal(err)
			}
			if resp, _ := (&edge{t: t, env: env, token: remote}).do("GET", snapshot.ConfigPath, nil); resp.StatusCode != 401 {
				t.Fatalf("revoked token: %d", resp.StatusCode)
			}
			// A new local token replaces the previous one.
			e2 := newEdge(t, env)
			if resp, _ := e.do("GET", snapshot.ConfigPath, nil); resp.StatusCode != 401 {
				t.Fatalf("old local token: %d", resp.StatusCode)
			}
			if resp, _ := e2.do("GET", snapshot.ConfigPath, nil); resp.StatusCode != 200 {
				t.Fatalf("new local token: %d", resp.StatusCode)
			}
			if resp, _ := e2.do("GET", snapshot.ConfigPath+"?after=x", nil); resp.StatusCode != 400 {
				t.Fatalf("bad after: %d", resp.StatusCode)
			}
			if resp, _ := e2.do("GET", snapshot.ConfigPath+"?after=1&wait=61", nil); resp.StatusCode != 400 {
				t.Fatalf("bad wait: %d", resp.StatusCode)
			}
		})
	}
}

func TestBlobsAndCounts(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			e := newEdge(t, env)
			prj := env.CreateProject("Site")
			var repo struct{ Repo struct{ ID string } }
			env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "r"}).JSON(t, &repo)
			env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m", "files": []any{
				map[string]any{"path": "index.html", "content": "<p>hello</p>"},
				map[string]any{"path": "id_rsa", "content": "PRIVATE"},
			}})
			env.Owner.Must(202, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": prj})
			env.CP.Deploys().Wait()
			_, s, _ := e.config(0, 0)
			// The site, and the deployment at its own address.
			if len(s.Sites) != 2 || len(s.Sites[0].Deployment.Files) != 1 || s.Sites[0].Host != "1--site.apps.test" || !s.Sites[0].NoIndex ||
				s.Sites[1].Host != "site.apps.test" || s.Sites[1].NoIndex || len(s.Sites[1].Deployment.Files) != 1 {
				t.Fatalf("sites: %+v", s.Sites)
			}
			f := s.Sites[0].Deployment.Files[0]
			resp, body := e.do("GET", snapshot.BlobsPath+f.SHA256, nil)
			if resp.StatusCode != 200 || string(body) != "<p>hello</p>" || resp.Header.Get("ETag") == "" {
				t.Fatalf("blob: %d %q", resp.StatusCode, body)
			}
			if resp, body := e.do("GET", snapshot.BlobsPath+f.SHA256, nil, "Range", "bytes=3-7"); resp.StatusCode != 206 || string(body) != "hello" {
				t.Fatalf("range: %d %q", resp.StatusCode, body)
			}
			// The private file is stored for the repo but never served to edges.
			private := "a0f3b4d3f0c1ce3d64e9fa5a7b8a9a5dd96b73bd8cbd6b8b4e0aa0c6e0f4f0f9"
			for path, want := range map[string]int{snapshot.BlobsPath + private: 404, snapshot.BlobsPath + "nothex": 400} {
				if resp, _ := e.do("GET", path, nil); resp.StatusCode != want {
					t.Fatalf("%s: %d want %d", path, resp.StatusCode, want)
				}
			}

			today := env.Clock.Now().Format("2006-01-02")
			good, _ := json.Marshal(snapshot.CountBatch{Batch: "batch-1", Counts: []rules.Count{{ID: prj, Rule: rules.RuleDenyList, Verdict: rules.Refuse, Day: today, N: 3}}})
			for i, wantDup := range []bool{false, true} {
				resp, body := e.do("POST", snapshot.CountsPath, good)
				var a snapshot.CountAnswer
				json.Unmarshal(body, &a)
				if resp.StatusCode != 200 || a.Duplicate != wantDup || (i == 0 && a.Accepted != 1) {
					t.Fatalf("send %d: %d %s", i, resp.StatusCode, body)
				}
			}
			var b struct{ Refused int64 }
			env.Owner.Must(200, "GET", "/api/services/shield/blocks", nil).JSON(t, &b)
			if b.Refused != 3 {
				t.Fatalf("a resent batch was counted twice: %d", b.Refused)
			}
			bad := []struct{ name, body string }{
				{"no batch", `{"counts":[]}`},
				{"unknown rule", `{"batch":"b","counts":[{"id":"` + prj + `","rule":"rate","verdict":"refuse","day":"` + today + `","n":1}]}`},
				{"allow verdict", `{"batch":"b","counts":[{"id":"` + prj + `","rule":"country","verdict":"allow","day":"` + today + `","n":1}]}`},
				{"bad day", `{"batch":"b","counts":[{"id":"` + prj + `","rule":"country","verdict":"refuse","day":"yesterday","n":1}]}`},
				{"zero", `{"batch":"b","counts":[{"id":"` + prj + `","rule":"country","verdict":"refuse","day":"` + today + `","n":0}]}`},
				{"unknown field", `{"batch":"b","counts":[],"edge":"x"}`},
			}
			for _, tt := range bad {
				t.Run(tt.name, func(t *testing.T) {
					if resp, body := e.do("POST", snapshot.CountsPath, []byte(tt.body)); resp.StatusCode != 400 {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
				})
			}
		})
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
