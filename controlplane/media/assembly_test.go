package media_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/plans"
)

// These tests run the media area inside the whole control plane
// (controlplane/cptest): routes, authentication, roles and plans as
// assembled for production.

// assetCount lists a project's media through the API.
func assetCount(t *testing.T, e *cptest.Env, project string) int {
	t.Helper()
	var out struct {
		Assets []media.Asset `json:"assets"`
	}
	e.Owner.Must(200, "GET", "/api/projects/"+project+"/media", nil).JSON(t, &out)
	return len(out.Assets)
}

func TestCreateRefusals(t *testing.T) {
	pro := cptest.New(t, cptest.Options{Plan: plans.Pro})
	hobby := cptest.New(t, cptest.Options{Plan: plans.Hobby})
	proProject, hobbyProject := pro.CreateProject("app"), hobby.CreateProject("app")
	for _, tc := range []struct {
		name   string
		env    *cptest.Env
		body   map[string]any
		status int
		code   string
	}{
		{"image", pro, map[string]any{"name": "a", "kind": "image"}, 501, "kind_not_supported"},
		{"audio", pro, map[string]any{"name": "a", "kind": "audio"}, 501, "kind_not_supported"},
		{"unknown kind", pro, map[string]any{"name": "a", "kind": "gif"}, 400, "invalid_request"},
		{"no kind", pro, map[string]any{"name": "a"}, 400, "invalid_request"},
		{"no name", pro, map[string]any{"kind": "video"}, 400, "invalid_request"},
		{"long name", pro, map[string]any{"name": strings.Repeat("n", media.MaxNameLen+1), "kind": "video"}, 400, "invalid_request"},
		{"unknown field", pro, map[string]any{"name": "a", "kind": "video", "x": 1}, 400, "unknown_field"},
		{"live without an RTMP server", pro, map[string]any{"name": "a", "kind": "live"}, 503, "live_unavailable"},
		{"hobby has no media", hobby, map[string]any{"name": "a", "kind": "video"}, 402, "plan_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project := proProject
			if tc.env == hobby {
				project = hobbyProject
			}
			r := tc.env.Owner.Do("POST", "/api/projects/"+project+"/media", tc.body)
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tc.code == "plan_limit" && !strings.Contains(string(r.Body), `"required_plan":"pro"`) {
				t.Fatalf("no required_plan: %s", r.Body)
			}
			if n := assetCount(t, tc.env, project); n != 0 {
				t.Fatalf("%d assets stored after a refusal", n)
			}
		})
	}
}

func TestAccessAndSecrets(t *testing.T) {
	e := cptest.New(t)
	project, other := e.CreateProject("app"), e.CreateProject("other")
	var c media.Created
	e.Owner.Must(201, "POST", "/api/projects/"+project+"/media", map[string]any{"name": "v", "kind": "video"}).JSON(t, &c)
	if u, err := url.Parse(c.UploadURL); err != nil || !strings.HasPrefix(u.Path, "/media/uploads/") {
		t.Fatalf("upload URL %q", c.UploadURL)
	}
	id := c.Asset.ID
	readOnly, otherKey := e.NewKey("read_only", ""), e.NewKey("full", other)
	viewer, dev := e.Member("viewer@example.com", "viewer"), e.Member("dev@example.com", "developer")
	for _, tc := range []struct {
		name         string
		client       *cptest.Client
		method, path string
		status       int
	}{
		{"read-only key reads", readOnly, "GET", "/api/media/" + id, 200},
		{"read-only key gets no upload URL", readOnly, "POST", "/api/media/" + id + "/upload", 403},
		{"read-only key creates nothing", readOnly, "POST", "/api/projects/" + project + "/media", 403},
		{"other project's key", otherKey, "GET", "/api/media/" + id, 403},
		{"no key", e.Client(""), "GET", "/api/media/" + id, 401},
		{"unknown asset", e.Owner, "GET", "/api/media/med_00000000000000000000", 404},
		{"viewer reads", viewer, "GET", "/api/media/" + id, 200},
		{"viewer gets no upload URL", viewer, "POST", "/api/media/" + id + "/upload", 403},
		{"viewer creates nothing", viewer, "POST", "/api/projects/" + project + "/media", 403},
		{"developer gets an upload URL", dev, "POST", "/api/media/" + id + "/upload", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if strings.HasSuffix(tc.path, "/media") {
				body = map[string]any{"name": "x", "kind": "video"}
			}
			r := tc.client.Do(tc.method, tc.path, body)
			if r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if strings.Contains(string(r.Body), "uploadUrl") != (tc.status == 200 && strings.HasSuffix(tc.path, "/upload")) {
				t.Fatalf("upload URL shown or missing: %s", r.Body)
			}
		})
	}
}
