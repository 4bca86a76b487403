// Package snapshot defines the edge configuration snapshot: the JSON
// document the control plane publishes at GET /edge/v1/config and every edge
// applies with one atomic swap. It depends only on the standard library and
// rules, so the edge can import it without the control plane.
//
// A snapshot is complete: an edge that holds one needs nothing else to route
// hosts, evaluate Shield, gate site passwords and serve static files (whose
// bytes it fetches by SHA-256 from GET /edge/v1/blobs/{sha256}, or reads
// from the shared data directory in `platform serve`).
package snapshot

import (
	"time"

	"github.com/svcplatform/platform/rules"
)

// Paths and headers of the edge protocol.
const (
	// ConfigPath is the long-poll endpoint: GET ConfigPath?after=<version>.
	ConfigPath = "/edge/v1/config"
	// BlobsPath prefixes GET BlobsPath + <sha256>.
	BlobsPath = "/edge/v1/blobs/"
	// CountsPath is where edges POST a CountBatch.
	CountsPath = "/edge/v1/counts"
	// VersionHeader carries the current version on every config answer
	// (200 and 304).
	VersionHeader = "Platform-Config-Version"
	// TokenPrefix starts every edge token; send it as Authorization: Bearer.
	TokenPrefix = "svc_edge_"
)

// Kinds of deployment.
const (
	KindStatic   = "static"
	KindApp      = "app"
	KindFunction = "function"
)

// Snapshot is one version of the edge configuration.
type Snapshot struct {
	// Version increases with every change that edges must see (deploy,
	// rollback, Shield save, Apply now, password change, CDN save, project
	// delete, custom domain claimed or removed). Edges long-poll with
	// after=<Version>.
	Version int64 `json:"version"`
	// GeneratedAt is when the control plane built this snapshot.
	GeneratedAt time.Time `json:"generatedAt"`
	// AppsDomain is the domain sites answer under (<slug>.<AppsDomain>).
	AppsDomain string `json:"appsDomain"`
	// SessionKey signs site-password session cookies
	// (rules.NewSessionSigner); 32 random bytes, base64 in JSON.
	SessionKey []byte `json:"sessionKey"`
	// Sites are the projects with a serving deployment, sorted by Host.
	Sites []Site `json:"sites"`
	// Workspaces hold the Shield and CDN settings in force per workspace,
	// sorted by ID. Every workspace of a site is present.
	Workspaces []Workspace `json:"workspaces"`
	// Media is the media playback host, nil when the platform serves
	// playback from the API's address only.
	Media *Media `json:"media,omitempty"`
	// Storage is the storage host serving public bucket objects, nil when
	// objects are served from the API's address only.
	Storage *Storage `json:"storage,omitempty"`
	// Domains are the custom domains whose control was proven, sorted by
	// Host; each answers like its project's site (Sites). Only domains of
	// projects with a site are listed.
	Domains []Domain `json:"domains,omitempty"`
}

// Domain is a custom domain of a project: the edge serves the project's
// site at Host with the site's Shield, cache and password, or redirects
// to RedirectTo.
type Domain struct {
	// Host is the custom name, lower case, without a port or trailing dot.
	Host string `json:"host"`
	// ProjectID is the project whose site answers (Site.ProjectID).
	ProjectID string `json:"projectId"`
	// RedirectTo, when set, is the host requests to Host are redirected to
	// (308 with the same path and query; 301 for GET and HEAD): the other
	// name of an apex and www pair.
	RedirectTo string `json:"redirectTo,omitempty"`
}

// MediaPathPrefix starts every path the playback host forwards: HLS
// playlists, segments and posters at MediaPathPrefix + <asset id>/<file>.
const MediaPathPrefix = "/media/"

// Media is the playback host: a dedicated host (as Cloudflare Stream's and
// Mux's) on which the edge answers GET and HEAD of MediaPathPrefix paths
// from its shared cache, forwarding misses to the control plane's public
// playback route, and 404 for every other path. Playback is public and
// belongs to no workspace: no workspace's Shield applies there.
type Media struct {
	// Host is the playback host name, lower case, without a port (e.g.
	// media.<appsDomain>). It takes precedence over a project's site of the
	// same name.
	Host string `json:"host"`
	// Origin is the control plane's http(s) base URL that playback
	// requests are forwarded to (its GET /media/{id}/{file} route).
	Origin string `json:"origin"`
}

// StoragePathPrefix starts every path the storage host forwards:
// StoragePathPrefix + <bucket id>/<key>.
const StoragePathPrefix = "/storage/"

// Storage is the storage host: a dedicated host (as R2's public bucket
// domains) on which the edge answers GET and HEAD of StoragePathPrefix
// paths, public buckets' objects from its shared cache under the origin's
// Cache-Control and signed URLs (a query) from the origin uncached, and
// 404 for every other path. It belongs to no workspace: no workspace's
// Shield applies there.
type Storage struct {
	// Host is the storage host name, lower case, without a port (e.g.
	// storage.<appsDomain>). It takes precedence over a project's site of
	// the same name.
	Host string `json:"host"`
	// Origin is the control plane's http(s) base URL that storage
	// requests are forwarded to (its GET /storage/{bucketId}/{key} route).
	Origin string `json:"origin"`
	// PublicBuckets are the ids of the public buckets, sorted: an unsigned
	// request for any other bucket is answered 404 by the edge, and a
	// cached object of a bucket that left the list is not served.
	PublicBuckets []string `json:"publicBuckets"`
}

// Site is one project's address and what it serves.
type Site struct {
	// Host is <slug>.<appsDomain>, lower case, without a port.
	Host string `json:"host"`
	// Slug is the project's permanent address label.
	Slug string `json:"slug"`
	// ProjectID identifies the site; edges count Shield decisions under it
	// (rules.Counters.Add(ProjectID, ...)).
	ProjectID string `json:"projectId"`
	// WorkspaceID names the Workspace whose Shield settings apply (static
	// sites, server apps; functions use Deployment.Shield).
	WorkspaceID string `json:"workspaceId"`
	// Deployment is the serving deployment.
	Deployment Deployment `json:"deployment"`
	// Password is set when the site is behind a site password (applies to
	// static sites only).
	Password *Password `json:"password,omitempty"`
	// Label, set on a deployment's own address, goes before the slug in
	// Host: <label><slug>.<appsDomain> (deploys: "<number>--").
	Label string `json:"label,omitempty"`
	// NoIndex makes the edge answer with X-Robots-Tag: noindex (a
	// deployment's own address: previews and earlier deployments).
	NoIndex bool `json:"noIndex,omitempty"`
}

// Deployment is a built, immutable deployment.
type Deployment struct {
	// ID changes with every deploy and rollback: cache keys include it.
	ID string `json:"id"`
	// Kind is static, app or function.
	Kind string `json:"kind"`
	// Origin is the http(s) base URL that app and function requests are
	// forwarded to; empty for static sites.
	Origin string `json:"origin,omitempty"`
	// Commit is the repo commit number deployed (0 for a redeploy of kept
	// files).
	Commit int `json:"commit"`
	// CreatedAt is when the deploy started; static files may use it as
	// Last-Modified.
	CreatedAt time.Time `json:"createdAt"`
	// CDN is the cache setting pinned at deploy (static sites).
	CDN CDN `json:"cdn"`
	// Shield is the Shield settings pinned at deploy, set for functions
	// only: functions receive rule changes on their next deploy.
	Shield *rules.Settings `json:"shield,omitempty"`
	// Files is the static file manifest sorted by Path (static sites only;
	// private files were omitted at deploy by the file guard).
	Files []File `json:"files,omitempty"`
	// Root is the static site's root inside the repository ("" for the
	// repository root): the edge's file guard judges root+path, so a root
	// that is itself private serves nothing.
	Root string `json:"root,omitempty"`
	// Managed marks an origin that is a process the platform runs for this
	// deployment: it is reachable on loopback whatever the private-network
	// rule says (never the platform's own listeners).
	Managed bool `json:"managed,omitempty"`
}

// StaticRoot is the static site's root inside the repository.
func (d *Deployment) StaticRoot() string { return d.Root }

// ManagedOrigin reports whether the origin is a process the platform runs.
func (d *Deployment) ManagedOrigin() bool { return d.Managed }

// File is one deployed static file.
type File struct {
	// Path is relative to the site root, '/'-separated, without a leading
	// slash ("index.html", "docs/a.html").
	Path string `json:"path"`
	// SHA256 names the blob holding the bytes (lower-case hex).
	SHA256 string `json:"sha256"`
	// Size is the length in bytes.
	Size int64 `json:"size"`
	// ContentType is the Content-Type to answer with.
	ContentType string `json:"contentType"`
}

// CDN is a cache setting.
type CDN struct {
	// Enabled false means nothing is kept and every visit is served fresh.
	Enabled bool `json:"enabled"`
	// CacheTTLSeconds is how long browsers and the edge keep a page.
	CacheTTLSeconds int64 `json:"cacheTtlSeconds"`
}

// Password is a site password as the edge checks it.
type Password struct {
	// Hash is the argon2id PHC string (rules.VerifyPassword).
	Hash string `json:"hash"`
	// Version is rules.PasswordVersion(Hash): session cookies are bound to
	// it, so a new password ends the old sessions.
	Version uint64 `json:"version"`
}

// Workspace is the per-workspace configuration.
type Workspace struct {
	// ID is the workspace id.
	ID string `json:"id"`
	// Shield is the saved Shield settings in force now, normalized and
	// valid (compile with rules.Compile). Static sites and server apps use
	// them at once.
	Shield rules.Settings `json:"shield"`
	// CDN is the saved CDN setting; it reaches sites on their next deploy
	// (sites use Deployment.CDN), and is here for information.
	CDN CDN `json:"cdn"`
}

// CountBatch is the body of POST CountsPath.
type CountBatch struct {
	// Batch identifies the batch (1 to 100 characters, e.g. a UUID): a batch
	// sent again after a lost answer is not counted twice.
	Batch string `json:"batch"`
	// Counts are drained rules.Counters rows; ID is the site's ProjectID.
	Counts []rules.Count `json:"counts"`
}

// CountAnswer is the answer to a CountBatch.
type CountAnswer struct {
	// Accepted is how many rows were added.
	Accepted int `json:"accepted"`
	// Skipped counts rows for sites that no longer exist.
	Skipped int `json:"skipped"`
	// Duplicate is true when the batch had been received before (nothing
	// was added again).
	Duplicate bool `json:"duplicate"`
}
