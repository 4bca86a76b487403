package certs

import (
	"testing"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// TestServesStorageHost: the storage host gets a certificate of its own,
// as the media playback host does, and only the host the snapshot names.
func TestServesStorageHost(t *testing.T) {
	snap := snapshot.Snapshot{AppsDomain: "apps.test", Storage: &snapshot.Storage{Host: "files.example.test", Origin: "http://127.0.0.1:7070"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"files.example.test", true},
		{"FILES.example.test", true},
		{"other.example.test", false},
		{"apps.test", true},
	} {
		if got := serves(snap, tc.host); got != tc.want {
			t.Errorf("serves(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if serves(snapshot.Snapshot{AppsDomain: "apps.test"}, "files.example.test") {
		t.Error("a storage host served without one in the snapshot")
	}
}
