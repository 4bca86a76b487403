package vectors

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/auth"
)

// TestRoutesReadOnlyQueryOnly: reads and queries need vector.read (which
// read-only keys hold); every other route vector.write.
func TestRoutesReadOnlyQueryOnly(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Routes(Handlers{}) {
		key := r.Method + " " + r.Path
		if seen[key] || r.Handler == nil {
			t.Fatalf("route %s twice or without handler", key)
		}
		seen[key] = true
		read := key == "GET /api/vectors/{id}" || key == "POST /api/vectors/{id}/query" || key == "GET /api/projects/{id}/vectors"
		if want := map[bool]auth.Op{true: auth.OpVectorRead, false: auth.OpVectorWrite}[read]; r.Op != want {
			t.Fatalf("%s: op %s, want %s", key, r.Op, want)
		}
	}
	if len(seen) != 7 {
		t.Fatalf("%d routes", len(seen))
	}
}
