package repos_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// entry is one tar entry of a test archive.
type entry struct {
	name string
	flag byte // tar.TypeReg when zero
	body string
	link string
}

func reg(name, body string) entry { return entry{name: name, body: body} }

// tarball builds a tar archive, gzip-compressed when gz.
func tarball(t testing.TB, gz bool, es ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.flag, Mode: 0o644, Linkname: e.link, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// routesClient serves the area's own rows (Routes) over the test control
// plane's services, as the assembled route table mounts them.
type routesClient struct {
	t   *testing.T
	url string
	key string
}

func newRoutesClient(t *testing.T, env *cptest.Env) *routesClient {
	mux := http.NewServeMux()
	api.Mount(mux, repos.Routes(repos.Handlers{S: env.CP.Repos()}), api.MountOptions{Authn: env.CP.Accounts, Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &routesClient{t: t, url: srv.URL, key: cptest.OwnerKey}
}

// answer is a decoded reply.
type answer struct {
	status int
	body   []byte
}

func (a answer) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a answer) message() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Message
}

func (c *routesClient) send(method, path, contentType string, body []byte, header http.Header) answer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: data}
}

func (c *routesClient) json(method, path string, v any) answer {
	data, _ := json.Marshal(v)
	return c.send(method, path, "application/json", data, nil)
}

// manifestBody builds a multipart push: the manifest, then the archive
// when not nil.
func manifestBody(t testing.TB, m repos.Manifest, archive []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	pw, _ := mw.CreateFormField("manifest")
	json.NewEncoder(pw).Encode(m)
	if archive != nil {
		aw, _ := mw.CreateFormFile("archive", "files.tar.gz")
		aw.Write(archive)
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// TestPushArchive: a snapshot sent as a tar or tar.gz is a commit like a
// JSON push; the message comes from ?message= or X-Commit-Message; every
// refusal (limits saying by how much, links, devices, escaping paths, a
// body that is no archive) stores nothing.
func TestPushArchive(t *testing.T) {
	env := cptest.New(t)
	c := newRoutesClient(t, env)
	id := newRepo(t, env, "site")
	commits := "/api/repos/" + id + "/commits"

	png := "\x89PNG\r\n\x1a\n\x00\x00binary"
	ok := []struct {
		name   string
		ctype  string
		query  string
		header string
		body   []byte
		files  int
	}{
		{"tar.gz, message in the query", "application/gzip", "?message=" + url.QueryEscape("first push ✓"), "",
			tarball(t, true, entry{name: "./", flag: tar.TypeDir}, reg("./index.html", "<h1>hi</h1>"), reg("img/logo.png", png), entry{name: "img/", flag: tar.TypeDir}), 2},
		{"plain tar, message in the header", "application/x-tar", "", url.PathEscape("second: ünïcode"),
			tarball(t, false, reg("index.html", "<h1>hi</h1>"), reg("about.html", "about")), 2},
		{"gzip told by its bytes whatever the type", "application/x-tar", "?message=third", "",
			tarball(t, true, reg("index.html", "<h1>v3</h1>")), 1},
	}
	for i, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set(repos.HeaderMessage, tt.header)
			}
			r := c.send("POST", commits+tt.query, tt.ctype, tt.body, h)
			if r.status != http.StatusCreated {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var a repos.CommitAnswer
			json.Unmarshal(r.body, &a)
			if a.Commit.Number != i+1 || a.Commit.Files != tt.files {
				t.Fatalf("commit %+v, want number %d with %d files", a.Commit, i+1, tt.files)
			}
		})
	}
	var d repos.Detail
	env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id, nil).JSON(t, &d)
	if d.Commits[2].Message != "first push ✓" || d.Commits[1].Message != "second: ünïcode" {
		t.Fatalf("messages: %q, %q", d.Commits[2].Message, d.Commits[1].Message)
	}
	var tree repos.Tree
	env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id+"/files?commit=1", nil).JSON(t, &tree)
	if len(tree.Files) != 2 || tree.Files[0].Path != "img/logo.png" || !tree.Files[0].Binary || tree.Files[0].Size != int64(len(png)) {
		t.Fatalf("tree: %+v", tree.Files)
	}
	commitsBefore, blobsBefore := 3, blobCount(t, env)

	nine := strings.Repeat("a", 9<<20)
	many := make([]entry, repos.MaxFilesPerPush+12)
	for i := range many {
		many[i] = reg(fmt.Sprintf("f%d.txt", i), "x")
	}
	bomb := func() []byte {
		// 70 MB of files of 9 MB: every header within the limits, the
		// whole past what an archive may unpack to.
		var es []entry
		for i := range 8 {
			es = append(es, reg(fmt.Sprintf("z%d", i), nine))
		}
		return tarball(t, true, es...)
	}()
	refused := []struct {
		name   string
		ctype  string
		query  string
		body   []byte
		status int
		code   string
		msg    string // substring of the message
	}{
		{"no message", "application/gzip", "", tarball(t, true, reg("a", "b")), 400, "invalid_request", "message is required"},
		{"empty message", "application/gzip", "?message=", tarball(t, true, reg("a", "b")), 400, "invalid_request", "message is required"},
		{"not an archive", "application/gzip", "?message=m", []byte("hello, not a tar"), 400, "invalid_archive", "tar"},
		{"broken gzip", "application/gzip", "?message=m", []byte{0x1f, 0x8b, 1, 2, 3}, 400, "invalid_archive", "tar"},
		{"empty archive", "application/x-tar", "?message=m", tarball(t, false), 400, "no_files", "no file"},
		{"symlink", "application/gzip", "?message=m", tarball(t, true, reg("a", "b"), entry{name: "link", flag: tar.TypeSymlink, link: "/etc/passwd"}), 400, "unsupported_entry", "symbolic link"},
		{"hard link", "application/gzip", "?message=m", tarball(t, true, reg("a", "b"), entry{name: "hl", flag: tar.TypeLink, link: "a"}), 400, "unsupported_entry", "hard link"},
		{"character device", "application/gzip", "?message=m", tarball(t, true, entry{name: "null", flag: tar.TypeChar}), 400, "unsupported_entry", "character device"},
		{"block device", "application/gzip", "?message=m", tarball(t, true, entry{name: "sda", flag: tar.TypeBlock}), 400, "unsupported_entry", "block device"},
		{"fifo", "application/gzip", "?message=m", tarball(t, true, entry{name: "p", flag: tar.TypeFifo}), 400, "unsupported_entry", "named pipe"},
		{"dot-dot", "application/gzip", "?message=m", tarball(t, true, reg("a/../../etc/x", "b")), 400, "invalid_path", `".."`},
		{"absolute", "application/gzip", "?message=m", tarball(t, true, reg("/etc/x", "b")), 400, "invalid_path", "absolute"},
		{"directory escaping", "application/gzip", "?message=m", tarball(t, true, entry{name: "../up/", flag: tar.TypeDir}, reg("a", "b")), 400, "invalid_path", `".."`},
		{"same file twice", "application/gzip", "?message=m", tarball(t, true, reg("a", "1"), reg("./a", "2")), 400, "duplicate_path", "same file"},
		{"file and directory", "application/gzip", "?message=m", tarball(t, true, reg("a", "1"), reg("a/b", "2")), 400, "path_conflict", "directory"},
		{"512 files", "application/gzip", "?message=m", tarball(t, true, many...), 400, "too_many_files", "this one has 512, 12 over"},
		{"file over 10 MB", "application/gzip", "?message=m", tarball(t, true, reg("big.bin", strings.Repeat("b", repos.MaxFileBytes+5))), 413, "file_too_large", "10485765 bytes (10.0 MB); a file is at most 10485760 bytes (10 MB): 5 bytes over"},
		{"push over 25 MB", "application/gzip", "?message=m", tarball(t, true, reg("a", nine), reg("b", nine), reg("c", nine)), 413, "push_too_large", "this one carries 28311552 (27.0 MB), 2097152 bytes over"},
		{"unpacks past 64 MB", "application/gzip", "?message=m", bomb, 413, "archive_too_large", "64 MB"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := c.send("POST", commits+tt.query, tt.ctype, tt.body, nil)
			if r.status != tt.status || r.code() != tt.code || !strings.Contains(r.message(), tt.msg) {
				t.Fatalf("status %d code %q message %q, want %d %q containing %q", r.status, r.code(), r.message(), tt.status, tt.code, tt.msg)
			}
		})
	}
	t.Run("message given twice", func(t *testing.T) {
		h := http.Header{repos.HeaderMessage: {"b"}}
		r := c.send("POST", commits+"?message=a", "application/gzip", tarball(t, true, reg("a", "b")), h)
		if r.status != 400 || !strings.Contains(r.message(), "once") {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	})
	env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id, nil).JSON(t, &d)
	if d.Repo.Commits != commitsBefore {
		t.Fatalf("a refused push stored a commit: %d commits", d.Repo.Commits)
	}
	if n := blobCount(t, env); n != blobsBefore {
		t.Fatalf("refused pushes stored %d blobs", n-blobsBefore)
	}
}

// TestPushManifest: a push names unchanged files by sum and sends only the
// others; the missing check says which; a sum the workspace does not hold
// is refused with the list to send; an archive must agree with the
// manifest.
func TestPushManifest(t *testing.T) {
	env := cptest.New(t)
	c := newRoutesClient(t, env)
	id := newRepo(t, env, "site")
	commits := "/api/repos/" + id + "/commits"
	big := strings.Repeat("big unchanged file ", 1000)
	if r := c.send("POST", commits+"?message=one", "application/gzip", tarball(t, true, reg("index.html", "v1"), reg("big.txt", big), reg(".env", "SECRET=1")), nil); r.status != 201 {
		t.Fatalf("first push: %d %s", r.status, r.body)
	}

	var miss repos.MissingAnswer
	r := c.json("POST", "/api/repos/"+id+"/blobs/missing", repos.MissingRequest{SHA256: []string{sum(big), sum("v2"), sum("v2"), sum("SECRET=1")}})
	if r.status != 200 {
		t.Fatalf("missing: %d %s", r.status, r.body)
	}
	json.Unmarshal(r.body, &miss)
	if strings.Join(miss.Missing, ",") != sum("v2")+","+sum("SECRET=1") {
		t.Fatalf("missing = %v, want v2's and the env file's (never kept)", miss.Missing)
	}

	m := repos.Manifest{Message: "two", Files: []repos.ManifestFile{
		{Path: "index.html", SHA256: sum("v2"), Size: 2},
		{Path: "big.txt", SHA256: sum(big), Size: int64(len(big))},
		{Path: "copy/big.txt", SHA256: sum(big), Size: int64(len(big))},
		// New bytes at two paths travel once.
		{Path: "again/index.html", SHA256: sum("v2"), Size: 2},
	}}
	ct, body := manifestBody(t, m, tarball(t, true, reg("index.html", "v2")))
	r = c.send("POST", commits, ct, body, nil)
	if r.status != 201 {
		t.Fatalf("manifest push: %d %s", r.status, r.body)
	}
	var a repos.CommitAnswer
	json.Unmarshal(r.body, &a)
	if a.Commit.Number != 2 || a.Commit.Files != 4 || a.Commit.StoredBytes != 2 || a.Commit.Size != int64(4+2*len(big)) {
		t.Fatalf("commit: %+v, want 4 files, 2 bytes stored", a.Commit)
	}
	var fc repos.FileContent
	env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id+"/files?commit=2&path=copy/big.txt", nil).JSON(t, &fc)
	if fc.Content != big {
		t.Fatal("a file named by sum does not read back")
	}
	// Nothing sent at all: every file named by sum.
	ct, body = manifestBody(t, repos.Manifest{Message: "three", Files: m.Files[1:]}, nil)
	if r := c.send("POST", commits, ct, body, nil); r.status != 201 {
		t.Fatalf("manifest without archive: %d %s", r.status, r.body)
	}

	before := blobCount(t, env)
	tooMany := make([]repos.ManifestFile, repos.MaxFilesPerPush+1)
	for i := range tooMany {
		tooMany[i] = repos.ManifestFile{Path: fmt.Sprintf("f%d", i), SHA256: sum(big), Size: int64(len(big))}
	}
	refused := []struct {
		name    string
		m       repos.Manifest
		archive []byte
		status  int
		code    string
		msg     string
	}{
		{"a sum not held", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "n.txt", SHA256: sum("new"), Size: 3}}}, nil, 409, "missing_files", "send their bytes"},
		{"an env file by sum", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: ".env", SHA256: sum("SECRET=1"), Size: 8}}}, nil, 409, "missing_files", "not held"},
		{"held blob, other size", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "b", SHA256: sum(big), Size: 5}}}, nil, 400, "size_mismatch", "not 5"},
		{"archive bytes not the manifest's", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "a", SHA256: sum("xx"), Size: 2}}},
			tarball(t, true, reg("a", "yy")), 400, "manifest_mismatch", "sha256"},
		{"archive size not the manifest's", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "a", SHA256: sum("xx"), Size: 2}}},
			tarball(t, true, reg("a", "xxx")), 400, "manifest_mismatch", "3 bytes"},
		{"archive entry not in the manifest", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "a", SHA256: sum("xx"), Size: 2}}},
			tarball(t, true, reg("a", "xx"), reg("b", "x")), 400, "manifest_mismatch", "not a file of the manifest"},
		{"bad sum", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "a", SHA256: "ABC", Size: 2}}}, nil, 400, "invalid_sha256", "hex"},
		{"no message", repos.Manifest{Files: []repos.ManifestFile{{Path: "a", SHA256: sum("xx"), Size: 2}}}, nil, 400, "invalid_request", "message"},
		{"501 files", repos.Manifest{Message: "m", Files: tooMany}, nil, 400, "too_many_files", "501, 1 over"},
		{"a file over 10 MB by its size", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "a", SHA256: sum("x"), Size: repos.MaxFileBytes + 1}}}, nil, 413, "file_too_large", "1 bytes over"},
		{"over 25 MB in all", repos.Manifest{Message: "m", Files: []repos.ManifestFile{
			{Path: "a", SHA256: sum("a"), Size: 9 << 20}, {Path: "b", SHA256: sum("b"), Size: 9 << 20}, {Path: "c", SHA256: sum("c"), Size: 9 << 20}}}, nil, 413, "push_too_large", "2097152 bytes over"},
		{"a path escaping", repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "../x", SHA256: sum("xx"), Size: 2}}}, nil, 400, "invalid_path", `".."`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := manifestBody(t, tt.m, tt.archive)
			r := c.send("POST", commits, ct, body, nil)
			if r.status != tt.status || r.code() != tt.code || !strings.Contains(r.message(), tt.msg) {
				t.Fatalf("status %d code %q message %q, want %d %q containing %q", r.status, r.code(), r.message(), tt.status, tt.code, tt.msg)
			}
			if tt.code == "missing_files" {
				var e struct {
					Error struct {
						Missing []string `json:"missing"`
					} `json:"error"`
				}
				json.Unmarshal(r.body, &e)
				if len(e.Error.Missing) != 1 || e.Error.Missing[0] != tt.m.Files[0].SHA256 {
					t.Fatalf("missing = %v", e.Error.Missing)
				}
			}
		})
	}
	t.Run("manifest not first", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("archive", "a.tar")
		w.Write(tarball(t, false, reg("a", "b")))
		mw.Close()
		if r := c.send("POST", commits, mw.FormDataContentType(), buf.Bytes(), nil); r.status != 400 || !strings.Contains(r.message(), "manifest") {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	})
	var d repos.Detail
	env.Owner.Must(http.StatusOK, "GET", "/api/repos/"+id, nil).JSON(t, &d)
	if d.Repo.Commits != 3 || blobCount(t, env) != before {
		t.Fatalf("refused pushes stored something: %d commits, %d new blobs", d.Repo.Commits, blobCount(t, env)-before)
	}

	missing := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"bad sum", repos.MissingRequest{SHA256: []string{"nope"}}, 400, "invalid_sha256"},
		{"too many", repos.MissingRequest{SHA256: make([]string, repos.MaxFilesPerPush+1)}, 400, "too_many_files"},
		{"unknown repo", nil, 404, "not_found"},
	}
	for _, tt := range missing {
		t.Run("missing: "+tt.name, func(t *testing.T) {
			path := "/api/repos/" + id + "/blobs/missing"
			if tt.body == nil {
				path, tt.body = "/api/repos/repo_nope/blobs/missing", repos.MissingRequest{SHA256: []string{sum("a")}}
			}
			if r := c.json("POST", path, tt.body); r.status != tt.status || r.code() != tt.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.status, r.code(), tt.status, tt.code, r.body)
			}
		})
	}
}

// TestHeldIsPerWorkspace: a workspace never learns through the missing
// check whether another workspace holds some content, and cannot name
// another workspace's blob by sum to commit (and then read) it.
func TestHeldIsPerWorkspace(t *testing.T) {
	ctx := context.Background()
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			db := eng.Open(t)
			for _, ws := range []string{"ws_a", "ws_b"} {
				if _, err := db.Exec(`INSERT INTO workspaces(id, name, created_at) VALUES (?, ?, 't')`, ws, ws); err != nil {
					t.Fatal(err)
				}
			}
			bs, err := blobs.Open(filepath.Join(t.TempDir(), "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			clk := clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
			s, err := repos.New(repos.Config{}, repos.Deps{DB: db, Blobs: bs, Clock: clk, Audit: audit.New(db, clk)})
			if err != nil {
				t.Fatal(err)
			}
			a := &auth.Principal{WorkspaceID: "ws_a", Role: auth.Owner, KeyPrefix: "a"}
			b := &auth.Principal{WorkspaceID: "ws_b", Role: auth.Owner, KeyPrefix: "b"}
			ra, err := s.Create(ctx, a, repos.CreateRequest{Name: "r"})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := s.Create(ctx, b, repos.CreateRequest{Name: "r"})
			if err != nil {
				t.Fatal(err)
			}
			secret := "workspace a's private file"
			if _, err := s.PushArchive(ctx, a, ra.ID, "m", bytes.NewReader(tarball(t, true, reg("secret.txt", secret)))); err != nil {
				t.Fatal(err)
			}
			if m, err := s.Missing(ctx, "ws_a", ra.ID, repos.MissingRequest{SHA256: []string{sum(secret)}}); err != nil || len(m.Missing) != 0 {
				t.Fatalf("workspace a: missing %v %v, want none", m.Missing, err)
			}
			if m, err := s.Missing(ctx, "ws_b", rb.ID, repos.MissingRequest{SHA256: []string{sum(secret)}}); err != nil || len(m.Missing) != 1 {
				t.Fatalf("workspace b: missing %v %v, want the sum workspace a holds", m.Missing, err)
			}
			if _, err := s.Missing(ctx, "ws_b", ra.ID, repos.MissingRequest{SHA256: []string{sum(secret)}}); api.AsError(err).Code != "not_found" {
				t.Fatalf("workspace b asking about a's repo: %v", err)
			}
			ct, body := manifestBody(t, repos.Manifest{Message: "m", Files: []repos.ManifestFile{{Path: "stolen.txt", SHA256: sum(secret), Size: int64(len(secret))}}}, nil)
			_, params, _ := strings.Cut(ct, "boundary=")
			_, err = s.PushManifest(ctx, b, rb.ID, multipart.NewReader(bytes.NewReader(body), params))
			if api.AsError(err).Code != "missing_files" {
				t.Fatalf("workspace b naming a's blob: %v, want missing_files", err)
			}
		})
	}
}
