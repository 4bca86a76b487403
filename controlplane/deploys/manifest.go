package deploys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/netguard"
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
//	{"kind": "app", "origin": "http://127.0.0.1:3000"}
//	{"kind": "function", "origin": "http://127.0.0.1:8787"}
type Manifest struct {
	// Kind is static (the default), app (a server app) or function.
	Kind string `json:"kind,omitempty"`
	// Origin is the http or https base address the edge forwards app and
	// function requests to (required for them, refused for static sites).
	Origin string `json:"origin,omitempty"`
	// Root is the directory of the commit served as the site root (static
	// only; default the repo root), e.g. "public" or "dist".
	Root string `json:"root,omitempty"`
}

// ParseManifest reads and validates a manifest; errors name the problem.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(data) > maxManifestBytes {
		return m, fmt.Errorf("%s is larger than %d bytes", ManifestFile, maxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s is not a valid manifest: %v (want {\"kind\": \"static\"|\"app\"|\"function\", \"origin\": ..., \"root\": ...})", ManifestFile, err)
	}
	if dec.More() {
		return m, fmt.Errorf("%s holds data after its JSON object", ManifestFile)
	}
	return m, m.Validate()
}

// Validate checks m and fills the default kind.
func (m *Manifest) Validate() error {
	if m.Kind == "" {
		m.Kind = snapshot.KindStatic
	}
	switch m.Kind {
	case snapshot.KindStatic:
		if m.Origin != "" {
			return fmt.Errorf("%s: a static site has no origin; use kind app or function to forward to one", ManifestFile)
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
	case snapshot.KindApp, snapshot.KindFunction:
		if m.Root != "" {
			return fmt.Errorf("%s: root applies to static sites only", ManifestFile)
		}
		u, err := url.Parse(m.Origin)
		switch {
		case m.Origin == "":
			return fmt.Errorf("%s: kind %s needs an origin, e.g. \"http://127.0.0.1:3000\"", ManifestFile, m.Kind)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
			return fmt.Errorf("%s: origin %q must be an http or https address with a host", ManifestFile, m.Origin)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
			return fmt.Errorf("%s: origin %q must be a bare scheme://host[:port], without a path, query or credentials", ManifestFile, m.Origin)
		}
		m.Origin = u.Scheme + "://" + strings.ToLower(u.Host)
	default:
		return fmt.Errorf("%s: kind %q is not static, app or function", ManifestFile, m.Kind)
	}
	return nil
}

// SitePath maps a file of the commit (its path from the repo root) to its
// path in the site: under Root, without the Root prefix. It reports false
// for a file outside Root, and for a private one, judged by the file
// guard on its full repository path (Root included), so that neither a
// private root nor a private directory above the served file is ever
// published. For app and function manifests it reports false.
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
