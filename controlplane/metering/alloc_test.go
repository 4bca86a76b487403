//go:build !race

package metering_test

import (
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/metering"
)

// Counting on a hot path must not allocate once its key was seen.
func TestHotPathAllocs(t *testing.T) {
	a := metering.NewAggregator(nil, nil)
	k := metering.NewKeyCalls(metering.New(nil, nil), 0, nil)
	p := &auth.Principal{WorkspaceID: "ws", KeyID: "key_1", ProjectID: "prj"}
	at := time.Now()
	tests := []struct {
		name string
		fn   func()
	}{
		{"Aggregator.Add", func() { a.Add("ws", "prj", metering.DatabaseQueries, 1, at) }},
		{"KeyCalls.KeyCall", func() { k.KeyCall(p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn()
			if n := testing.AllocsPerRun(1000, tt.fn); n != 0 {
				t.Fatalf("allocs = %v, want 0", n)
			}
		})
	}
}
