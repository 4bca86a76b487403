// Package dashboard serves the web dashboard: the built single-page app of
// web/dashboard, embedded in the binary, at the root of the API address.
//
// Every page has its own URL; a path that names no built file is answered
// with index.html, whose script routes it. Hashed assets under /assets/ are
// cached for a year as immutable, index.html and the other files are
// revalidated on every load (ETag). Every answer carries a strict
// Content-Security-Policy: scripts, styles and connections only from this
// origin, no inline script, no framing.
//
// A binary built before the dashboard (a fresh checkout's `go build`)
// serves a page that says to run `make build`.
package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed all:site
var site embed.FS

// CSP is the Content-Security-Policy of every answer. img-src allows data:
// URLs for pictures the pages draw themselves; media-src allows blob: URLs,
// which the video player (hls.js on Media Source Extensions) plays from.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; media-src 'self' blob:; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Cache-Control values.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// file is one built file, held in memory, with its gzip encoding when
// that is smaller (scripts, styles, HTML, SVG, JSON).
type file struct {
	body  []byte
	etag  string
	ctype string
	gz    []byte
}

// Handler serves the dashboard's files.
type Handler struct {
	files map[string]file // by URL path: "/index.html", "/assets/x-1a2b.js"
	index file
	built bool
}

var _ http.Handler = (*Handler)(nil)

// New serves the embedded build (site/dist), or the placeholder page when
// the binary was built without it.
func New() *Handler {
	dist, err := fs.Sub(site, "site/dist")
	if err != nil {
		return NewFS(nil)
	}
	return NewFS(dist)
}

// NewFS serves the build in fsys (its index.html at the root); a nil fsys,
// or one without index.html, serves the placeholder page.
func NewFS(fsys fs.FS) *Handler {
	h := &Handler{files: map[string]file{}}
	if fsys != nil {
		fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			body, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil
			}
			h.files["/"+p] = newFile(p, body)
			return nil
		})
	}
	if idx, ok := h.files["/index.html"]; ok {
		h.index, h.built = idx, true
	} else {
		h.files = map[string]file{}
		h.index = newFile("index.html", []byte(placeholder))
	}
	return h
}

func newFile(name string, body []byte) file {
	sum := sha256.Sum256(body)
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	f := file{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
	switch path.Ext(name) {
	case ".js", ".css", ".html", ".svg", ".json", ".map", ".txt":
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		if b.Len() < len(body) {
			f.gz = b.Bytes()
		}
	}
	return f
}

// Built reports whether the handler serves a real build rather than the
// placeholder page.
func (h *Handler) Built() bool { return h.built }

// ServeHTTP answers GET and HEAD: a built file, or index.html for a page's
// URL. A missing file under /assets/, or a missing path that names a file
// (it has an extension), is 404 rather than a page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard answers GET and HEAD only; the API is under /api/", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean("/" + r.URL.Path)
	if f, ok := h.files[p]; ok && p != "/index.html" {
		cache := cacheRevalidate
		if strings.HasPrefix(p, "/assets/") {
			cache = cacheImmutable
		}
		serve(w, r, f, cache)
		return
	}
	if strings.HasPrefix(p, "/assets/") || (path.Ext(p) != "" && p != "/index.html") {
		hd.Set("Cache-Control", cacheRevalidate)
		http.Error(w, "no such file in this dashboard build", http.StatusNotFound)
		return
	}
	if !h.built {
		hd.Set("Cache-Control", "no-store")
		hd.Set("Content-Type", h.index.ctype)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(h.index.body)
		return
	}
	serve(w, r, h.index, cacheRevalidate)
}

// serve answers f, gzip-encoded (compressed once, when the build is
// loaded) to clients that accept it: the video page's player is 362 KB of
// script and 115 KB on the wire.
func serve(w http.ResponseWriter, r *http.Request, f file, cache string) {
	hd := w.Header()
	hd.Set("Cache-Control", cache)
	hd.Set("Content-Type", f.ctype)
	body, etag := f.body, f.etag
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip (a
// q=0 refuses it).
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(part, ";")
		if name = strings.TrimSpace(name); !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		_, q, found := strings.Cut(strings.ReplaceAll(params, " ", ""), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// placeholder is served in place of every page by a binary built without
// the dashboard.
const placeholder = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main>
<h1>The dashboard is not in this binary</h1>
<p>This binary was built before the dashboard. Run <code>make build</code> (or <code>make run</code>)
in the repository: it installs the dashboard's packages with <code>npm ci</code>, builds it with Vite
into <code>controlplane/dashboard/site/dist</code> and builds the binary with it.</p>
<p>The API works without it: its description is at <a href="/api/openapi.json">/api/openapi.json</a>.</p>
</main></body></html>
`
