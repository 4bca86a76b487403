package memory

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// BenchmarkServiceGet: one key read through the service alone (no HTTP):
// what the area adds to a request, on each engine.
func BenchmarkServiceGet(b *testing.B) {
	for _, e := range pgtest.Engines() {
		b.Run(e.Name, func(b *testing.B) {
			f := newFixture(b, e, Config{})
			st := f.create("kv")
			for i := range 100 {
				f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, fmt.Sprintf("k%03d", i)), fmt.Sprint("value ", i))
			}
			p := callers["viewer"]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := f.svc.Get(context.Background(), p, st.ID, fmt.Sprintf("k%03d", i%100)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
