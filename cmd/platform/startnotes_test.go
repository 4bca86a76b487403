package main

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// TestPublicURL: --public-url takes an absolute http(s) address and
// refuses the rest with a line naming the flag.
func TestPublicURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"https://cp.example.com", "https://cp.example.com", true},
		{"https://cp.example.com/", "https://cp.example.com", true},
		{"https://example.com/platform/", "https://example.com/platform", true},
		{"http://10.0.0.1:7070", "http://10.0.0.1:7070", true},
		{"cp.example.com", "", false},
		{"ftp://cp.example.com", "", false},
		{"https://", "", false},
		{"https://user:pw@cp.example.com", "", false},
		{"https://cp.example.com/?x=1", "", false},
		{"https://cp.example.com/#top", "", false},
		{"https://cp.example.com:bad", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := publicURL(options{publicURL: tc.in})
			if tc.ok && (err != nil || got != tc.want) {
				t.Fatalf("%q: %q %v, want %q", tc.in, got, err, tc.want)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "--public-url")) {
				t.Fatalf("%q: %q %v, want a refusal naming --public-url", tc.in, got, err)
			}
		})
	}
	o := testOptions(t, "--public-url", "cp.example.com")
	if err := runTest(t, t.Context(), "serve", o, quiet, nil); err == nil || !strings.Contains(err.Error(), "--public-url") {
		t.Fatalf("serve with a bad --public-url: %v", err)
	}
}

// TestServePublicURL: with --public-url the links the control plane hands
// out (the setup link printed at start, a public bucket's object URL when
// no edge storage host serves buckets, a database's endpoint) start with
// it; without, with the API address. (With the storage host, bucket links
// start with it: TestStorageHostOf.)
func TestServePublicURL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		want  func(o options) string
	}{
		{"public URL", []string{"--public-url", "https://cp.example.test/"}, func(options) string { return "https://cp.example.test" }},
		{"default: the API address", nil, func(o options) string { return "http://" + o.apiAddr }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, append([]string{"--rtmp-addr", "", "--storage-host", "-"}, tc.extra...)...)
			s := startServe(t, o)
			base := tc.want(o)
			out := s.out.String()
			if !strings.Contains(out, "platform: public URL "+base+" ") || !strings.Contains(out, base+"/setup?token=svcsetup_") {
				t.Fatalf("start printed %q, want the public URL %s and the setup link on it", out, base)
			}
			var p struct {
				Project struct{ ID string } `json:"project"`
			}
			if st := s.api(t, "POST", "/api/projects", map[string]any{"name": "links"}, &p); st != 201 {
				t.Fatalf("create project: %d", st)
			}
			var b struct {
				Bucket struct {
					ID        string  `json:"id"`
					PublicURL *string `json:"publicUrl"`
				} `json:"bucket"`
			}
			if st := s.api(t, "POST", "/api/projects/"+p.Project.ID+"/buckets", map[string]any{"name": "pics", "public": true}, &b); st != 201 {
				t.Fatalf("create bucket: %d", st)
			}
			if b.Bucket.PublicURL == nil || *b.Bucket.PublicURL != base+"/storage/"+b.Bucket.ID+"/" {
				t.Fatalf("bucket publicUrl %v, want %s/storage/%s/", b.Bucket.PublicURL, base, b.Bucket.ID)
			}
			var d struct {
				Database struct{ ID, Endpoint string } `json:"database"`
			}
			if st := s.api(t, "POST", "/api/projects/"+p.Project.ID+"/databases", map[string]any{"name": "links"}, &d); st != 201 {
				t.Fatalf("create database: %d", st)
			}
			if d.Database.Endpoint != base+"/api/databases/"+d.Database.ID {
				t.Fatalf("database endpoint %q, want it on %s", d.Database.Endpoint, base)
			}
		})
	}
}

// TestServeLiveIngestDefaultPortBusy: live ingest at its default address
// is optional: a busy port leaves it off and the platform starts, saying
// so; an address the operator chose must bind (TestFailedFirstStart).
func TestServeLiveIngestDefaultPortBusy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		busy     func(o *options) *string
		wantOut  []string
		wantGone []string
	}{
		{"RTMP default port busy", func(o *options) *string { return &o.rtmpAddr },
			[]string{"live ingest RTMP off: its default address ", "choose a free one with --rtmp-addr", "live ingest over RTMPS off"}, []string{"live ingest at"}},
		{"RTMPS default port busy", func(o *options) *string { return &o.rtmpsAddr },
			[]string{"live ingest RTMPS off: its default address ", "choose a free one with --rtmps-addr"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			o := testOptions(t)
			at := tc.busy(&o)
			*at = ln.Addr().String()
			// The port is busy and at its "default": neither flag nor
			// environment named it.
			delete(o.set, "rtmp-addr")
			delete(o.set, "rtmps-addr")
			s := startServe(t, o)
			out := s.out.String()
			for _, w := range append(tc.wantOut, ln.Addr().String()) {
				if !strings.Contains(out, w) {
					t.Errorf("start printed %q, want %q in it", out, w)
				}
			}
			for _, w := range tc.wantGone {
				if strings.Contains(out, w) {
					t.Errorf("start printed %q, want no %q", out, w)
				}
			}
			if st := s.api(t, "GET", "/api/workspace", nil, nil); st != 200 {
				t.Fatalf("the platform does not answer: %d", st)
			}
		})
	}
}

// TestServeFirstStartFlagsOnExistingData: --plan (and the other flags of a
// first start) on a data directory that has its workspace say plainly
// that they do nothing there.
func TestServeFirstStartFlagsOnExistingData(t *testing.T) {
	o := testOptions(t, "--rtmp-addr", "")
	s := startServe(t, o)
	if out := s.out.String(); strings.Contains(out, "does nothing here") {
		t.Fatalf("a first start printed %q", out)
	}
	s.stop()
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"plan", []string{"--plan", "pro"}, `--plan pro does nothing here: this data directory already has its workspaces, which keep their plans; change a workspace's plan with: platform workspace plan WORKSPACE_ID PLAN`},
		{"owner e-mail", []string{"--owner-email", "ops@example.com"}, "--owner-email ops@example.com does nothing here"},
		{"none given", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o2 := testOptions(t, append([]string{"--data", o.data, "--rtmp-addr", ""}, tc.extra...)...)
			delete(o2.set, "bootstrap-key")
			s := startServe(t, o2)
			out := s.out.String()
			n := len(regexp.MustCompile(`does nothing here`).FindAllString(out, -1))
			if tc.want == "" && n != 0 || tc.want != "" && (n != 1 || !strings.Contains(out, tc.want)) {
				t.Fatalf("start printed %q, want %q once", out, tc.want)
			}
		})
	}
}
