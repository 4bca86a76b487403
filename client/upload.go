package client

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
)

// File is one file of a push.
type File struct {
	// Path is its path in the repo, "/"-separated.
	Path string
	// Size and SHA256 (lower-case hex) describe its bytes.
	Size   int64
	SHA256 string
	// Open returns its bytes (called only for files the server lacks).
	Open func() (io.ReadCloser, error)
}

// PushOptions describe a push.
type PushOptions struct {
	// Message is the commit message (required).
	Message string
	// Progress, when set, is called as the body goes out with the bytes
	// sent so far and the body's size.
	Progress func(sent, total int64)
}

// PushResult is a stored commit and what the push sent.
type PushResult struct {
	Commit Commit `json:"commit"`
	// Sent is how many files' bytes went out; Reused how many the
	// workspace already held and were named by sum only.
	Sent   int `json:"sent"`
	Reused int `json:"reused"`
	// BodyBytes is the size of the request body sent.
	BodyBytes int64 `json:"bodyBytes"`
}

// MissingBlobs asks which of the sums the workspace does not hold yet.
func (c *Client) MissingBlobs(ctx context.Context, repoID string, sums []string) ([]string, error) {
	var out struct {
		Missing []string `json:"missing"`
	}
	return out.Missing, c.post(ctx, "/api/repos/"+esc(repoID)+"/blobs/missing", map[string][]string{"sha256": sums}, &out)
}

// Push stores files as the repo's next commit, sending the bytes of only
// the files whose sums the workspace does not hold: it asks
// (MissingBlobs), then sends a manifest of every file with a tar.gz of
// the missing ones, and once more with any the server still reports
// missing (409 missing_files). A server without the missing check gets
// every file in one tar.gz.
func (c *Client) Push(ctx context.Context, repoID string, files []File, o PushOptions) (PushResult, error) {
	sums := make([]string, 0, len(files))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if !seen[f.SHA256] {
			seen[f.SHA256] = true
			sums = append(sums, f.SHA256)
		}
	}
	missing, err := c.MissingBlobs(ctx, repoID, sums)
	if IsCode(err, "no_route") {
		return c.pushWhole(ctx, repoID, files, o)
	}
	if err != nil {
		return PushResult{}, err
	}
	res, err := c.pushManifest(ctx, repoID, files, missing, o)
	var again []string
	if e := (*Error)(nil); errors.As(err, &e) && e.Code == "missing_files" && e.Field("missing", &again) && len(again) > 0 {
		res, err = c.pushManifest(ctx, repoID, files, append(missing, again...), o)
	}
	return res, err
}

// pushWhole sends every file in one tar.gz.
func (c *Client) pushWhole(ctx context.Context, repoID string, files []File, o PushOptions) (PushResult, error) {
	archive, n, err := Archive(files, nil)
	if err != nil {
		return PushResult{}, err
	}
	cm, err := c.PushArchive(ctx, repoID, o.Message, bytes.NewReader(archive), int64(len(archive)), o.Progress)
	return PushResult{Commit: cm, Sent: n, BodyBytes: int64(len(archive))}, err
}

// Archive writes a tar.gz of the files whose sums are in only (every file
// when only is nil), each sum once, and returns it with the count of
// files in it.
func Archive(files []File, only map[string]bool) ([]byte, int, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	written := map[string]bool{}
	n := 0
	for _, f := range files {
		if (only != nil && !only[f.SHA256]) || written[f.SHA256] {
			continue
		}
		written[f.SHA256] = true
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Typeflag: tar.TypeReg, Mode: 0o644, Size: f.Size, Format: tar.FormatPAX}); err != nil {
			return nil, 0, fmt.Errorf("client: archive %s: %w", f.Path, err)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, 0, fmt.Errorf("client: archive %s: %w", f.Path, err)
		}
		_, err = io.CopyN(tw, rc, f.Size)
		rc.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("client: archive %s: the file changed while it was read (%w): push again", f.Path, err)
		}
		n++
	}
	if err := tw.Close(); err != nil {
		return nil, 0, fmt.Errorf("client: archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, 0, fmt.Errorf("client: archive: %w", err)
	}
	return buf.Bytes(), n, nil
}

// manifestFile is one file of a push's manifest.
type manifestFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// pushManifest sends the manifest of every file and a tar.gz of the
// files whose sums are in missing.
func (c *Client) pushManifest(ctx context.Context, repoID string, files []File, missing []string, o PushOptions) (PushResult, error) {
	only := make(map[string]bool, len(missing))
	for _, s := range missing {
		only[s] = true
	}
	m := struct {
		Message string         `json:"message"`
		Files   []manifestFile `json:"files"`
	}{Message: o.Message, Files: make([]manifestFile, len(files))}
	res := PushResult{}
	for i, f := range files {
		m.Files[i] = manifestFile{Path: f.Path, SHA256: f.SHA256, Size: f.Size}
		if !only[f.SHA256] {
			res.Reused++
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	pw, err := mw.CreateFormField("manifest")
	if err != nil {
		return res, err
	}
	if err := json.NewEncoder(pw).Encode(m); err != nil {
		return res, fmt.Errorf("client: manifest: %w", err)
	}
	if len(only) > 0 {
		archive, n, err := Archive(files, only)
		if err != nil {
			return res, err
		}
		res.Sent = n
		aw, err := mw.CreateFormFile("archive", "files.tar.gz")
		if err != nil {
			return res, err
		}
		aw.Write(archive)
	}
	if err := mw.Close(); err != nil {
		return res, err
	}
	res.BodyBytes = int64(body.Len())
	var out struct {
		Commit Commit `json:"commit"`
	}
	err = c.do(ctx, request{method: http.MethodPost, path: "/api/repos/" + esc(repoID) + "/commits",
		body: progressReader(bytes.NewReader(body.Bytes()), int64(body.Len()), o.Progress), contentLength: int64(body.Len()),
		contentType: mw.FormDataContentType()}, &out)
	res.Commit = out.Commit
	return res, err
}

// PushArchive sends a tar or tar.gz of a whole snapshot as the repo's next
// commit; size is the archive's length.
func (c *Client) PushArchive(ctx context.Context, repoID, message string, archive io.Reader, size int64, progress func(sent, total int64)) (Commit, error) {
	var out struct {
		Commit Commit `json:"commit"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/repos/" + esc(repoID) + "/commits", query: url.Values{"message": {message}},
		body: progressReader(archive, size, progress), contentLength: size, contentType: "application/gzip"}, &out)
	return out.Commit, err
}

// progress counts the bytes read through it.
type progress struct {
	r     io.Reader
	sent  int64
	total int64
	fn    func(sent, total int64)
}

func progressReader(r io.Reader, total int64, fn func(sent, total int64)) io.Reader {
	if fn == nil {
		return r
	}
	return &progress{r: r, total: total, fn: fn}
}

func (p *progress) Read(b []byte) (int, error) {
	// Small reads make a smooth bar: at most 256 KB between two reports.
	if len(b) > 256<<10 {
		b = b[:256<<10]
	}
	n, err := p.r.Read(b)
	p.sent += int64(n)
	if n > 0 {
		p.fn(p.sent, p.total)
	}
	return n, err
}
