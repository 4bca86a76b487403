package deploys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/internal/netguard"
	"github.com/svcplatform/platform/rules"
)

// ManifestFile is the optional file in a repo's root that says what a
// deployment serves. Without it a commit deploys as a static site of all its
// files.
const ManifestFile = "platform.json"

// maxManifestBytes bounds the manifest.
const maxManifestBytes = 64 << 10

// Manifest is the content of platform.json:
//
//	{"kind": "static", "root": "public"}
//	{"kind": "app", "run": ["./server"], "health": "/health"}
//	{"kind": "app", "origin": "http://127.0.0.1:3000"}
//	{"kind": "worker", "run": ["node", "worker.js"]}
//	{"kind": "function", "module": "fn.wasm"}
//	{"kind": "function", "origin": "http://127.0.0.1:8787"}
type Manifest struct {
	// Kind is static (the default), app (a server app), worker (a worker
	// program) or function.
	Kind string `json:"kind,omitempty"`
	// Origin is the http or https base address the edge forwards app and
	// function requests to: an app or function the user runs elsewhere
	// (external origin). Exclusive with Run and Module.
	Origin string `json:"origin,omitempty"`
	// Root is the directory of the commit served as the site root (static
	// only; default the repo root), e.g. "public" or "dist".
	Root string `json:"root,omitempty"`
	// Run is the command the platform starts an app or a worker program
	// with, in the commit's directory: ["./server"], ["node", "server.js"].
	// A relative program path ("./server", "bin/app") must be a file of the
	// commit.
	Run []string `json:"run,omitempty"`
	// Health is the path an app run by the platform is probed on (GET,
	// 2xx or 3xx is healthy); without it the app is healthy once its port
	// accepts connections.
	Health string `json:"health,omitempty"`
	// Module is the repo path of a function's WASI module (a .wasm file
	// of the commit) the platform runs.
	Module string `json:"module,omitempty"`
	// Build is the build step run before the deployment (see BuildSpec);
	// absent, the platform detects one (DetectBuild).
	Build *BuildSpec `json:"build,omitempty"`
}

// Manifest limits.
const (
	// MaxRunArgs bounds the words of run.
	MaxRunArgs = 64
	// MaxRunBytes bounds the total size of run.
	MaxRunBytes = 4096
	// MaxHealthBytes bounds the health path.
	MaxHealthBytes = 1024
)

// KindWorker is a worker program: a long-running program the platform runs
// with no public address.
const KindWorker = "worker"

const manifestShape = `{"kind": "static"|"app"|"worker"|"function", "root": ..., "run": [...], "health": ..., "module": ..., "origin": ..., "build": {"install": ..., "command": ..., "output": ...}}`

// ParseManifest reads and validates a manifest; errors name the problem.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(data) > maxManifestBytes {
		return m, fmt.Errorf("%s is larger than %d bytes", ManifestFile, maxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s is not a valid manifest: %v (want %s)", ManifestFile, err, manifestShape)
	}
	if dec.More() {
		return m, fmt.Errorf("%s holds data after its JSON object", ManifestFile)
	}
	return m, m.Validate()
}

// Managed reports whether the platform runs the deployment itself (a
// command or a module) rather than forwarding to an external origin or
// serving static files.
func (m *Manifest) Managed() bool { return len(m.Run) > 0 || m.Module != "" }

// Validate checks m and fills the default kind.
func (m *Manifest) Validate() error {
	if m.Kind == "" {
		m.Kind = snapshot.KindStatic
	}
	if err := m.validateBuild(); err != nil {
		return err
	}
	only := func(field string, set bool, kinds string) error {
		if set {
			return fmt.Errorf("%s: %s applies to %s only", ManifestFile, field, kinds)
		}
		return nil
	}
	switch m.Kind {
	case snapshot.KindStatic:
		if m.Origin != "" {
			return fmt.Errorf("%s: a static site has no origin; use kind app or function to forward to one", ManifestFile)
		}
		if err := errors.Join(only("run", m.Run != nil, "apps and worker programs"), only("health", m.Health != "", "apps"),
			only("module", m.Module != "", "functions")); err != nil {
			return err
		}
		if m.Root != "" {
			root, err := repos.CleanPath(m.Root)
			if err != nil {
				return fmt.Errorf("%s: root: %v", ManifestFile, err)
			}
			// A root that is itself private (".git", ".ssh", "a/.git", any
			// dot-directory or key store) would serve what the file guard
			// keeps: .git/config with its credentials at /config.
			if private, reason := rules.PrivateFile(root); private {
				return fmt.Errorf("%s: root %q is private (%s): the file guard never serves it; name a public directory such as \"public\" or \"dist\"", ManifestFile, root, reason)
			}
			m.Root = root
		}
		return nil
	case snapshot.KindApp, snapshot.KindFunction, KindWorker:
	default:
		return fmt.Errorf("%s: kind %q is not static, app, worker or function", ManifestFile, m.Kind)
	}
	if m.Root != "" {
		return fmt.Errorf("%s: root applies to static sites only", ManifestFile)
	}
	switch m.Kind {
	case snapshot.KindApp:
		if err := only("module", m.Module != "", "functions"); err != nil {
			return err
		}
		switch {
		case m.Origin != "" && m.Run != nil:
			return fmt.Errorf("%s: an app has either run (the platform runs it) or origin (it runs elsewhere), not both", ManifestFile)
		case m.Origin == "" && m.Run == nil:
			return fmt.Errorf("%s: kind app needs run, e.g. [\"./server\"] or [\"node\", \"server.js\"], or an origin, e.g. \"http://127.0.0.1:3000\"", ManifestFile)
		case m.Run == nil && m.Health != "":
			return fmt.Errorf("%s: health applies to apps the platform runs (with run)", ManifestFile)
		case m.Run != nil:
			return m.validateRun()
		}
	case KindWorker:
		if err := errors.Join(only("origin", m.Origin != "", "apps and functions: a worker program has no address"),
			only("health", m.Health != "", "apps"), only("module", m.Module != "", "functions")); err != nil {
			return err
		}
		if m.Run == nil {
			return fmt.Errorf("%s: kind worker needs run, e.g. [\"node\", \"worker.js\"]", ManifestFile)
		}
		return m.validateRun()
	case snapshot.KindFunction:
		if err := errors.Join(only("run", m.Run != nil, "apps and worker programs"), only("health", m.Health != "", "apps")); err != nil {
			return err
		}
		switch {
		case m.Origin != "" && m.Module != "":
			return fmt.Errorf("%s: a function has either module (the platform runs it) or origin (it runs elsewhere), not both", ManifestFile)
		case m.Origin == "" && m.Module == "":
			return fmt.Errorf("%s: kind function needs module, e.g. \"fn.wasm\", or an origin, e.g. \"http://127.0.0.1:8787\"", ManifestFile)
		case m.Module != "":
			mod, err := repos.CleanPath(m.Module)
			if err != nil {
				return fmt.Errorf("%s: module: %v", ManifestFile, err)
			}
			m.Module = mod
			return nil
		}
	}
	return m.validateOrigin()
}

func (m *Manifest) validateOrigin() error {
	u, err := url.Parse(m.Origin)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%s: origin %q must be an http or https address with a host", ManifestFile, m.Origin)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return fmt.Errorf("%s: origin %q must be a bare scheme://host[:port], without a path, query or credentials", ManifestFile, m.Origin)
	}
	m.Origin = u.Scheme + "://" + strings.ToLower(u.Host)
	return nil
}

// validateRun checks run and health.
func (m *Manifest) validateRun() error {
	if len(m.Run) == 0 || m.Run[0] == "" {
		return fmt.Errorf("%s: run names no program: give the command as a list, e.g. [\"./server\"]", ManifestFile)
	}
	if len(m.Run) > MaxRunArgs {
		return fmt.Errorf("%s: run has %d words; at most %d", ManifestFile, len(m.Run), MaxRunArgs)
	}
	total := 0
	for i, a := range m.Run {
		total += len(a)
		if !utf8.ValidString(a) || strings.ContainsRune(a, 0) {
			return fmt.Errorf("%s: run[%d] is not valid text (NUL byte or invalid UTF-8)", ManifestFile, i)
		}
	}
	if total > MaxRunBytes {
		return fmt.Errorf("%s: run is %d bytes long; at most %d", ManifestFile, total, MaxRunBytes)
	}
	if p, ok := m.Program(); ok {
		if _, err := repos.CleanPath(p); err != nil || strings.HasPrefix(p, "../") || p == ".." {
			return fmt.Errorf("%s: run[0] %q must be a file of the commit (\"./server\"), a name looked up in PATH (\"node\") or an absolute path", ManifestFile, m.Run[0])
		}
	}
	if m.Health != "" {
		u, err := url.Parse(m.Health)
		if len(m.Health) > MaxHealthBytes || err != nil || m.Health[0] != '/' || strings.HasPrefix(m.Health, "//") || u.Host != "" ||
			strings.ContainsAny(m.Health, " \t\r\n#") {
			return fmt.Errorf("%s: health %q must be a path starting with / (at most %d bytes), e.g. \"/health\"", ManifestFile, m.Health, MaxHealthBytes)
		}
	}
	return nil
}

// Program returns the commit file run[0] names ("./server" -> "server",
// "bin/app" -> "bin/app"), and false when run[0] is a name looked up in
// PATH or an absolute path.
func (m *Manifest) Program() (string, bool) {
	if len(m.Run) == 0 {
		return "", false
	}
	p := m.Run[0]
	if strings.HasPrefix(p, "/") || !strings.Contains(p, "/") {
		return "", false
	}
	return path.Clean(p), true
}

// SitePath maps a file of the commit (its path from the repo root) to its
// path in the site: under Root, without the Root prefix. It reports false
// for a file outside Root, and for a private one, judged by the file
// guard on its full repository path (Root included), so that neither a
// private root nor a private directory above the served file is ever
// published. For app, worker and function manifests it reports false.
func (m *Manifest) SitePath(repoPath string) (string, bool) {
	if m.Kind != snapshot.KindStatic && m.Kind != "" {
		return "", false
	}
	p := repoPath
	if m.Root != "" {
		rest, ok := strings.CutPrefix(repoPath, m.Root+"/")
		if !ok {
			return "", false
		}
		p = rest
	}
	if private, _ := rules.PrivateFile(repoPath); private {
		return "", false
	}
	if private, _ := rules.PrivateFile(p); private {
		return "", false
	}
	return p, true
}

// ErrPrivateOrigin is wrapped by CheckOrigin's refusal of an origin on a
// loopback, private, link-local or reserved network, or on the platform's
// own listeners (see package netguard).
var ErrPrivateOrigin = netguard.ErrForbiddenAddress

// CheckOrigin checks an app's or function's origin at deploy: unless
// allowPrivate (--allow-private-networks), an origin whose host is, or
// resolves to, a loopback, private, link-local or reserved address is
// refused with an error that names the rule. It never connects, so it
// does not tell whether a port answers there; the edge checks again at
// every connection. A static manifest (no origin) passes.
func (m *Manifest) CheckOrigin(allowPrivate bool) error {
	if m.Origin == "" {
		return nil
	}
	if err := netguard.CheckURL(m.Origin, allowPrivate); err != nil {
		if errors.Is(err, netguard.ErrForbiddenAddress) {
			return fmt.Errorf("%s: origin %s: %w (origins on internal networks are served only when the operator allows them with --allow-private-networks)", ManifestFile, m.Origin, err)
		}
		return fmt.Errorf("%s: origin %q: %w", ManifestFile, m.Origin, err)
	}
	return nil
}
