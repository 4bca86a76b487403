package edge

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// table is one configuration snapshot compiled for serving. It is immutable
// once built; the edge swaps in a new one atomically, so a request sees one
// consistent table from its first line to its last.
type table struct {
	version int64
	sites   map[string]*site // by lower-case host without port
	signer  *rules.SessionSigner
	blobs   []blobRef // every blob the static sites serve
}

// siteKind is what a site serves.
type siteKind uint8

const (
	kindStatic siteKind = iota
	kindApp
	kindFunction
	numSiteKinds
)

var siteKindNames = [numSiteKinds]string{"static", "app", "function"}

func (k siteKind) String() string { return siteKindNames[k] }

// site is one host's configuration.
type site struct {
	host      string
	projectID string
	kind      siteKind
	target    rules.Target
	rules     *rules.Ruleset // the workspace's (static, app) or the deployment's pinned (function)
	dep       *deployment
	password  *sitePassword // static sites only
	// redirect, set on a custom domain's host, is the host its requests
	// are redirected to (the other name of an apex and www pair).
	redirect []byte
	// storage is set on the storage host only (storage.go).
	storage *storageHost
	// noindex: answers carry X-Robots-Tag: noindex (a deployment's own
	// address).
	noindex bool
}

// sitePassword is a site password as the edge checks it.
type sitePassword struct {
	hash    string
	version uint64
}

// deployment is a compiled deployment.
type deployment struct {
	id string
	// files maps a request path without its leading '/' to what answers
	// it: "", "index.html", "docs/", "docs/index.html", "about" (for
	// about.html) and "docs" (a redirect to "docs/").
	files    map[string]*file
	notFound *file // the site's 404.html, answered with 404; nil when none
	// ttl is the pinned cacheTtlSeconds; 0 when the CDN is disabled.
	ttl          time.Duration
	cacheControl []byte
	lastModified []byte
	origin       *origin // apps and functions
	// target is the shared-cache target of apps and functions: the
	// deployment id, so a deploy starts with an empty cache.
	target string
	// private is set for a static deployment whose root directory in the
	// repository is itself private (".git", "a/.ssh"): the file guard
	// judges the full repository path (root + request path), so every
	// request to it is answered 404.
	private bool
}

// file is one servable static file.
type file struct {
	path        string
	key         []byte // cache key path
	sum         string
	size        int64
	status      int
	contentType []byte
	compress    bool
	etag        [numEncodings][]byte
	redirect    bool // a directory asked for without its trailing slash
}

// blobRef names a blob and its expected size.
type blobRef struct {
	sum  string
	size int64
}

// errSnapshot is wrapped by the errors of compile.
var errSnapshot = errors.New("edge: unusable configuration")

// compile builds a table from a snapshot. origins returns the pooled origin
// client for a base URL.
func compile(s *snapshot.Snapshot, origins func(base string, managed bool) (*origin, error)) (*table, error) {
	t := &table{version: s.Version, sites: make(map[string]*site, len(s.Sites))}
	workspaces := make(map[string]*rules.Ruleset, len(s.Workspaces))
	for _, w := range s.Workspaces {
		rs, err := rules.Compile(w.Shield)
		if err != nil {
			return nil, fmt.Errorf("%w: workspace %s: %w", errSnapshot, w.ID, err)
		}
		workspaces[w.ID] = rs
	}
	seenBlob := map[string]bool{}
	for i := range s.Sites {
		ss := &s.Sites[i]
		host := strings.ToLower(strings.TrimSuffix(ss.Host, "."))
		if host == "" {
			return nil, fmt.Errorf("%w: a site without a host", errSnapshot)
		}
		st := &site{host: host, projectID: ss.ProjectID, noindex: ss.NoIndex}
		d := &ss.Deployment
		switch d.Kind {
		case snapshot.KindStatic, "":
			st.kind, st.target = kindStatic, rules.TargetStaticSite
		case snapshot.KindApp:
			st.kind, st.target = kindApp, rules.TargetServerApp
		case snapshot.KindFunction:
			st.kind, st.target = kindFunction, rules.TargetFunction
		default:
			return nil, fmt.Errorf("%w: site %s: deployment kind %q", errSnapshot, host, d.Kind)
		}
		switch st.kind {
		case kindFunction:
			settings := rules.DefaultSettings()
			if d.Shield != nil {
				settings = *d.Shield
			}
			rs, err := rules.Compile(settings)
			if err != nil {
				return nil, fmt.Errorf("%w: site %s: pinned shield: %w", errSnapshot, host, err)
			}
			st.rules = rs
		default:
			st.rules = workspaces[ss.WorkspaceID] // nil (no rules) for an unknown workspace
		}
		dep, err := compileDeployment(d, st.kind, origins)
		if err != nil {
			return nil, fmt.Errorf("%w: site %s: %w", errSnapshot, host, err)
		}
		st.dep = dep
		if st.kind == kindStatic {
			for _, f := range d.Files {
				if !seenBlob[f.SHA256] {
					seenBlob[f.SHA256] = true
					t.blobs = append(t.blobs, blobRef{f.SHA256, f.Size})
				}
			}
			if ss.Password != nil && ss.Password.Hash != "" {
				st.password = &sitePassword{hash: ss.Password.Hash, version: ss.Password.Version}
				if st.password.version == 0 {
					st.password.version = rules.PasswordVersion(ss.Password.Hash)
				}
			}
		}
		t.sites[host] = st
	}
	if err := compileMedia(t, s.Media); err != nil { // the playback host (media.go)
		return nil, err
	}
	if err := compileStorage(t, s.Storage, s.Media); err != nil { // the storage host (storage.go)
		return nil, err
	}
	if err := compileDomains(t, s.Domains); err != nil { // custom domains (domains.go)
		return nil, err
	}
	if len(s.SessionKey) > 0 {
		signer, err := rules.NewSessionSigner(s.SessionKey)
		if err != nil {
			return nil, fmt.Errorf("%w: session key: %w", errSnapshot, err)
		}
		t.signer = signer
	}
	return t, nil
}

func compileDeployment(d *snapshot.Deployment, kind siteKind, origins func(base string, managed bool) (*origin, error)) (*deployment, error) {
	dep := &deployment{id: d.ID, target: d.ID}
	if kind != kindStatic {
		o, err := origins(d.Origin, managedOrigin(d))
		if err != nil {
			return nil, err
		}
		dep.origin = o
		return dep, nil
	}
	if d.CDN.Enabled && d.CDN.CacheTTLSeconds > 0 {
		dep.ttl = time.Duration(d.CDN.CacheTTLSeconds) * time.Second
		dep.cacheControl = []byte("public, max-age=" + strconv.FormatInt(d.CDN.CacheTTLSeconds, 10))
	} else {
		dep.cacheControl = []byte("no-cache")
	}
	if !d.CreatedAt.IsZero() {
		dep.lastModified = fasthttp.AppendHTTPDate(nil, d.CreatedAt)
	}
	dep.private = rootPrivate(staticRoot(d))
	dep.files = make(map[string]*file, len(d.Files)*2)
	add := func(p string, f *file) {
		if _, ok := dep.files[p]; !ok {
			dep.files[p] = f
		}
	}
	var htmls []*file
	for _, sf := range d.Files {
		p := strings.TrimPrefix(sf.Path, "/")
		if private, _ := rules.PrivateFile(p); private {
			continue // the control plane leaves these out; never served
		}
		f := newFile(p, sf, 200)
		dep.files[p] = f
		if strings.HasSuffix(p, ".html") {
			htmls = append(htmls, f)
		}
		if p == "404.html" {
			dep.notFound = newFile(p, sf, 404)
		}
	}
	for _, f := range htmls {
		if base := path.Base(f.path); base == "index.html" {
			add(strings.TrimSuffix(f.path, "index.html"), f)
		}
	}
	for _, f := range htmls {
		if path.Base(f.path) != "index.html" {
			add(strings.TrimSuffix(f.path, ".html"), f)
		}
	}
	for _, f := range htmls {
		if dir := strings.TrimSuffix(f.path, "index.html"); dir != f.path && dir != "" {
			add(strings.TrimSuffix(dir, "/"), &file{path: dir, redirect: true})
		}
	}
	return dep, nil
}

func newFile(p string, sf snapshot.File, status int) *file {
	f := &file{path: p, sum: sf.SHA256, size: sf.Size, status: status, contentType: []byte(sf.ContentType)}
	if len(f.contentType) == 0 {
		f.contentType = []byte("application/octet-stream")
	}
	key := p
	if status != 200 {
		key = "\x00" + strconv.Itoa(status) + "/" + p
	}
	f.key = []byte(key)
	f.compress = compressible(sf.ContentType) && sf.Size >= minCompressBytes
	tag := sf.SHA256
	if len(tag) > 32 {
		tag = tag[:32]
	}
	f.etag[encIdentity] = []byte(`"` + tag + `"`)
	f.etag[encGzip] = []byte(`"` + tag + `-gz"`)
	f.etag[encBrotli] = []byte(`"` + tag + `-br"`)
	return f
}

// managedDeployment is what a snapshot deployment implements once it
// carries the flag "the platform runs this origin itself" (a process it
// started for the deployment; such origins are exempt from the private
// network guard). See managedOrigin.
type managedDeployment interface{ ManagedOrigin() bool }

// managedOrigin reports whether d's origin is a process the platform runs
// itself for the deployment. The snapshot says so through
// ManagedOrigin() bool on *snapshot.Deployment; until a snapshot carries
// it, every origin is a user's and the guard applies.
func managedOrigin(d *snapshot.Deployment) bool {
	m, ok := any(d).(managedDeployment)
	return ok && m.ManagedOrigin()
}

// rootedDeployment is what a snapshot deployment implements once it
// carries its static root (the repository directory served as the site
// root). See staticRoot.
type rootedDeployment interface{ StaticRoot() string }

// staticRoot returns the repository directory d serves as its site root,
// "" for the repository root or when the snapshot does not say.
func staticRoot(d *snapshot.Deployment) string {
	if r, ok := any(d).(rootedDeployment); ok {
		return r.StaticRoot()
	}
	return ""
}

// rootPrivate reports whether a static root directory is itself private
// to the file guard (".git", ".ssh", "a/.git", a key store).
func rootPrivate(root string) bool {
	if root == "" {
		return false
	}
	private, _ := rules.PrivateFile(root)
	return private
}

// minCompressBytes is the smallest file worth compressing.
const minCompressBytes = 256

// compressible reports whether a content type gains from compression.
func compressible(ct string) bool {
	ct = strings.ToLower(ct)
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = strings.TrimSpace(ct[:i])
	}
	switch {
	case strings.HasPrefix(ct, "text/"),
		strings.HasSuffix(ct, "+json"), strings.HasSuffix(ct, "+xml"):
		return true
	}
	switch ct {
	case "application/json", "application/javascript", "application/xml", "application/wasm",
		"image/svg+xml", "image/x-icon", "image/bmp", "font/ttf", "font/otf", "application/x-javascript":
		return true
	}
	return false
}

// lookupHost returns the site of a Host header value (port and a trailing
// dot ignored, ASCII case folded). It does not allocate.
func (t *table) lookupHost(host []byte) *site {
	if t == nil {
		return nil
	}
	var buf [256]byte
	h, ok := normalizeHost(buf[:0], host)
	if !ok {
		return nil
	}
	return t.sites[string(h)]
}

// normalizeHost appends host without its port and trailing dot, in lower
// case, to dst. It reports false for an empty or over-long host.
func normalizeHost(dst, host []byte) ([]byte, bool) {
	if len(host) > 0 && host[0] == '[' { // IPv6 literal: no site has one
		return nil, false
	}
	for i := len(host) - 1; i >= 0; i-- {
		if host[i] == ':' {
			host = host[:i]
			break
		}
		if host[i] < '0' || host[i] > '9' {
			break
		}
	}
	if len(host) > 0 && host[len(host)-1] == '.' {
		host = host[:len(host)-1]
	}
	if len(host) == 0 || len(host) > cap(dst)-len(dst) {
		return nil, false
	}
	for _, c := range host {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
}
