// Command apidoc writes what the dashboard's TypeScript is checked against:
// the control plane's OpenAPI document (the one GET /api/openapi.json
// serves) and the permission table, as JSON files in one directory.
//
//	go run ./controlplane/dashboard/apidoc -out web/dashboard/src/api/generated
//
// The dashboard's build generates its types from these files, so a change
// to the API that breaks a page breaks the build.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

func main() {
	out := flag.String("out", ".", "directory to write openapi.json and permissions.json into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "apidoc:", err)
		os.Exit(1)
	}
}

// Permissions is the permission table as the dashboard reads it.
type Permissions struct {
	// Roles are the role names, lowest first.
	Roles []string `json:"roles"`
	// Ops maps each operation (an OpenAPI operation's x-permission) to
	// its rule.
	Ops map[string]Rule `json:"ops"`
	// Routes maps "METHOD /path/{param}" to the operation it performs
	// (absent for public routes).
	Routes map[string]string `json:"routes"`
}

// Rule is one row of the permission table.
type Rule struct {
	MinRole      string `json:"minRole"`
	Write        bool   `json:"write"`
	OwnerSession bool   `json:"ownerSession"`
	SessionOnly  bool   `json:"sessionOnly"`
}

// PermissionTable returns the permission table of package auth and the
// operation of each route.
func PermissionTable(routes []api.Route) Permissions {
	p := Permissions{Ops: map[string]Rule{}, Routes: map[string]string{}}
	for _, rt := range routes {
		if rt.Op != "" {
			p.Routes[rt.Method+" "+strings.ReplaceAll(rt.Path, "...}", "}")] = string(rt.Op)
		}
	}
	for r := auth.Viewer; r <= auth.Owner; r++ {
		p.Roles = append(p.Roles, r.String())
	}
	ops := auth.Ops()
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	for _, op := range ops {
		r, _ := auth.RuleOf(op)
		p.Ops[string(op)] = Rule{MinRole: r.MinRole.String(), Write: r.Write, OwnerSession: r.OwnerSession, SessionOnly: r.SessionOnly}
	}
	return p
}

func run(out string) error {
	// The document comes from the assembled route table: a control plane
	// in a throwaway data directory, never started.
	dir, err := os.MkdirTemp("", "apidoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cp, err := controlplane.New(context.Background(), controlplane.Config{DataDir: dir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OriginProbeEvery: -1})
	if err != nil {
		return err
	}
	routes := cp.Routes()
	doc := controlplane.OpenAPI(routes)
	if err := cp.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "openapi.json"), doc); err != nil {
		return err
	}
	return writeJSON(filepath.Join(out, "permissions.json"), PermissionTable(routes))
}

// writeJSON writes v indented, replacing path only when complete.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
