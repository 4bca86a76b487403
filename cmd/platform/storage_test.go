package main

import "testing"

// TestStorageHostOf: which storage host each command gives the edges.
func TestStorageHostOf(t *testing.T) {
	for _, tc := range []struct {
		cmd, flag, want string
	}{
		{"serve", "", "storage.example.test"},
		{"serve", "files.example.test", "files.example.test"},
		{"serve", "-", ""},
		{"controlplane", "", ""},
		{"controlplane", "files.example.test", "files.example.test"},
		{"controlplane", "-", ""},
		{"edge", "files.example.test", ""},
	} {
		o := options{appsDomain: "example.test", storageHost: tc.flag}
		if got := storageHostOf(tc.cmd, o); got != tc.want {
			t.Errorf("%s --storage-host %q: %q, want %q", tc.cmd, tc.flag, got, tc.want)
		}
	}
}
