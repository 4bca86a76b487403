package main

import "testing"

// TestMediaHostOf: which playback host each command gives the edges.
func TestMediaHostOf(t *testing.T) {
	for _, tc := range []struct {
		cmd, flag, want string
	}{
		{"serve", "", "media.example.test"},
		{"serve", "play.example.test", "play.example.test"},
		{"serve", "-", ""},
		{"controlplane", "", ""},
		{"controlplane", "play.example.test", "play.example.test"},
		{"controlplane", "-", ""},
		{"edge", "play.example.test", ""},
	} {
		o := options{appsDomain: "example.test", mediaHost: tc.flag}
		if got := mediaHostOf(tc.cmd, o); got != tc.want {
			t.Errorf("%s --media-host %q: %q, want %q", tc.cmd, tc.flag, got, tc.want)
		}
	}
	if portSuffix("443") != "" || portSuffix("8443") != ":8443" {
		t.Error("portSuffix")
	}
}
