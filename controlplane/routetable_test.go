package controlplane_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
)

var update = flag.Bool("update", false, "rewrite testdata/routes.golden from the route table")

// TestRouteTableGolden keeps the whole route table (method, path, operation
// and the permission rule it applies) in testdata/routes.golden, so that a
// route or permission change shows in review. Refresh it with
// `go test ./controlplane -run TestRouteTableGolden -update`.
func TestRouteTableGolden(t *testing.T) {
	env := cptest.New(t)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tPATH\tOPERATION\tPERMISSION")
	for _, rt := range env.CP.Routes() {
		op, perm := string(rt.Op), "public"
		if rt.Public {
			op = "-"
		} else {
			r, ok := auth.RuleOf(rt.Op)
			if !ok {
				t.Fatalf("%s %s: operation %q has no rule", rt.Method, rt.Path, rt.Op)
			}
			perm = describeRule(r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rt.Method, rt.Path, op, perm)
	}
	tw.Flush()
	golden := filepath.Join("testdata", "routes.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the route table differs from %s: review the change and refresh it with -update\n%s", golden, lineDiff(string(want), got))
	}
}

// describeRule is a rule as one column: the lowest role, then its marks.
func describeRule(r auth.Rule) string {
	parts := []string{r.MinRole.String() + "+"}
	switch r.Scope {
	case auth.ScopeWorkspace:
		parts = append(parts, "workspace")
	case auth.ScopeProject:
		parts = append(parts, "project")
	case auth.ScopeListing:
		parts = append(parts, "listing")
	}
	for _, m := range []struct {
		on   bool
		name string
	}{{r.Write, "write"}, {r.FullAccess, "full-access"}, {r.OwnerSession, "owner-session"}, {r.SessionOnly, "session-only"}} {
		if m.on {
			parts = append(parts, m.name)
		}
	}
	return strings.Join(parts, " ")
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
