package deploys

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/rules"
)

// BuildSpec is platform.json's build: what runs in the sandbox before the
// deployment, in the commit's directory.
//
//	{"build": {"install": "npm ci", "command": "npm run build", "output": "dist"}}
//
// An empty object (or one without install and command) turns the build
// off; an absent one lets the platform detect it (DetectBuild).
type BuildSpec struct {
	// Install is the shell command installing dependencies ("npm ci").
	Install string `json:"install,omitempty"`
	// Command is the shell command building the deployment ("npm run
	// build").
	Command string `json:"command,omitempty"`
	// Output is the directory a static site's build writes: it is served
	// as the site root. Empty: the first of DefaultOutputs the build made.
	// Apps, worker programs and functions keep the whole built directory.
	Output string `json:"output,omitempty"`
	// Framework names what detection recognised (for the log); never
	// read from platform.json.
	Framework string `json:"-"`
}

// MaxBuildCommandBytes bounds install and command.
const MaxBuildCommandBytes = 4096

// DefaultOutputs are the directories a static build's output is looked
// for in, in order, when neither platform.json nor detection names one.
var DefaultOutputs = []string{"dist", "build", "out", "public", "_site"}

// Steps reports whether the spec runs anything.
func (b *BuildSpec) Steps() bool { return b != nil && (b.Install != "" || b.Command != "") }

// validateBuild checks the build of a manifest.
func (m *Manifest) validateBuild() error {
	b := m.Build
	if b == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"install", b.Install}, {"command", b.Command}} {
		if len(f.v) > MaxBuildCommandBytes {
			return fmt.Errorf("%s: build.%s is %d bytes long; at most %d", ManifestFile, f.name, len(f.v), MaxBuildCommandBytes)
		}
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return fmt.Errorf("%s: build.%s is not valid text (NUL byte or invalid UTF-8)", ManifestFile, f.name)
		}
	}
	if b.Output != "" {
		if m.Kind != snapshot.KindStatic && m.Kind != "" {
			return fmt.Errorf("%s: build.output applies to static sites only (an app, worker program or function keeps the whole built directory)", ManifestFile)
		}
		out, err := repos.CleanPath(b.Output)
		if err != nil {
			return fmt.Errorf("%s: build.output: %v", ManifestFile, err)
		}
		if private, reason := rules.PrivateFile(out); private {
			return fmt.Errorf("%s: build.output %q is private (%s): name a public directory such as \"dist\"", ManifestFile, out, reason)
		}
		b.Output = out
	}
	if b.Steps() && m.Origin != "" {
		return fmt.Errorf("%s: build applies to what the platform serves or runs, not to an origin that runs elsewhere", ManifestFile)
	}
	if b.Steps() && m.Root != "" && b.Output != "" {
		return fmt.Errorf("%s: give the served directory of a build as build.output, not root", ManifestFile)
	}
	return nil
}

// packageJSON is what detection reads of a package.json.
type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
}

// maxPackageJSON bounds the package.json detection reads.
const maxPackageJSON = 1 << 20

// frameworks are the static generators detection recognises by a
// dependency, with the directory each writes.
var frameworks = []struct{ dep, name, output string }{
	{"astro", "Astro", "dist"},
	{"next", "Next.js (static export)", "out"},
	{"@11ty/eleventy", "Eleventy", "_site"},
	{"gatsby", "Gatsby", "public"},
	{"react-scripts", "Create React App", "build"},
	{"@sveltejs/kit", "SvelteKit (static adapter)", "build"},
	{"vite", "Vite", "dist"},
}

// DetectBuild fills in the build of a manifest without one, the way
// Vercel and Netlify do, from the commit's files (read returns a file's
// content by path, false when absent):
//
//   - package.json with a build script: install with npm ci (a
//     package-lock.json) or npm install (dependencies without a lock
//     file; nothing to install without dependencies), then npm run
//     build; a static site's output is the recognised generator's
//     directory (Vite, Astro: dist; Next.js static export: out; ...),
//     else the first of DefaultOutputs the build made;
//   - an app or worker program with a package.json: install its
//     dependencies (unless the commit holds an installed node_modules),
//     and run its build script when it has one;
//   - hugo.toml, hugo.yaml or hugo.json: hugo --minify into public.
//
// It returns nil when there is nothing to build, or an error for a
// package.json that does not parse.
func DetectBuild(m Manifest, read func(path string) ([]byte, bool)) (*BuildSpec, error) {
	if m.Build != nil || m.Origin != "" || m.Kind == snapshot.KindFunction {
		return nil, nil
	}
	if data, ok := read("package.json"); ok {
		if len(data) > maxPackageJSON {
			return nil, fmt.Errorf("package.json is larger than %d bytes", maxPackageJSON)
		}
		var pj packageJSON
		if err := json.Unmarshal(data, &pj); err != nil {
			return nil, fmt.Errorf("package.json is not valid JSON: %v", err)
		}
		b := &BuildSpec{}
		_, installed := read("node_modules/.package-lock.json") // npm's record of an installed tree
		if len(pj.Dependencies)+len(pj.DevDependencies) > 0 && !installed {
			if _, ok := read("package-lock.json"); ok {
				b.Install = "npm ci"
			} else {
				b.Install = "npm install"
			}
		}
		if strings.TrimSpace(pj.Scripts["build"]) != "" {
			b.Command = "npm run build"
		}
		static := m.Kind == snapshot.KindStatic || m.Kind == ""
		if static && b.Command == "" {
			return nil, nil // a static site that builds nothing is served as it is
		}
		if static {
			b.Framework, b.Output = "npm", m.Root
			for _, f := range frameworks {
				if _, ok := pj.Dependencies[f.dep]; ok || pj.DevDependencies[f.dep] != "" {
					b.Framework = f.name
					if b.Output == "" {
						b.Output = f.output
					}
					break
				}
			}
		} else {
			b.Framework = "npm"
		}
		if !b.Steps() {
			return nil, nil
		}
		return b, nil
	}
	if m.Kind != snapshot.KindStatic && m.Kind != "" {
		return nil, nil
	}
	for _, cfg := range []string{"hugo.toml", "hugo.yaml", "hugo.json"} {
		if _, ok := read(cfg); ok {
			out := m.Root
			if out == "" {
				out = "public"
			}
			return &BuildSpec{Command: "hugo --minify", Output: out, Framework: "Hugo"}, nil
		}
	}
	return nil, nil
}
