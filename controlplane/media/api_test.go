package media

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/plans"
)

func TestPlanLimit(t *testing.T) {
	for _, tc := range []struct {
		plan       plans.Name
		held, want int
		refused    bool
		required   string
	}{
		{plans.Hobby, 0, 1, true, "pro"},
		{plans.Pro, 99, 100, false, ""},
		{plans.Pro, 100, 101, true, "scale"},
		{plans.Pro, 150, 150, true, "scale"}, // still holding assets of a richer plan
		{plans.Enterprise, 999, 1000, false, ""},
		{plans.Enterprise, 1000, 1001, true, ""},
	} {
		err := planLimit(tc.plan, tc.held, tc.want, KindVideo)
		if (err != nil) != tc.refused {
			t.Fatalf("%+v: %v", tc, err)
		}
		if err != nil && tc.required != "" && !strings.Contains(errFields(err), tc.required) {
			t.Fatalf("%+v: fields %s", tc, errFields(err))
		}
	}
}

func errFields(err error) string {
	return fmt.Sprint(api.AsError(err).Fields)
}

func TestUploadRefusals(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{NoWorkers: true, MaxUploadBytes: 1000})
	dir := t.TempDir()
	small := filepath.Join(dir, "small.bin")
	os.WriteFile(small, bytes.Repeat([]byte("x"), 500), 0o644)
	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, bytes.Repeat([]byte("x"), 5000), 0o644)
	empty := filepath.Join(dir, "empty.bin")
	os.WriteFile(empty, nil, 0o644)

	t.Run("expired URL gets a fresh one", func(t *testing.T) {
		id, up := e.createVideo("expiring")
		e.Clock.Advance(DefaultUploadTTL + time.Minute)
		if r := e.upload(up, "file", small); r.Status != 410 || r.Code() != "upload_url_expired" {
			t.Fatalf("expired: %d %s", r.Status, r.Body)
		}
		var ua UploadAnswer
		e.must(200, ownerKey, "POST", "/api/media/"+id+"/upload", nil).Decode(t, &ua)
		if ua.UploadURL == up || !ua.ExpiresAt.After(e.Clock.Now()) {
			t.Fatalf("fresh: %+v", ua)
		}
		if r := e.upload(up, "file", small); r.Status != 404 || r.Code() != "upload_url_unknown" {
			t.Fatalf("replaced URL: %d %s", r.Status, r.Body)
		}
		var got ReceivedAnswer
		if r := e.upload(ua.UploadURL, "file", small); r.Status != 201 {
			t.Fatalf("fresh URL: %d %s", r.Status, r.Body)
		} else {
			r.Decode(t, &got)
		}
		if got.ID != id || !got.Received || got.Status != StatusProcessing {
			t.Fatalf("upload answer %+v, want id %s", got, id)
		}
		if a := e.asset(id); a.Status != StatusProcessing || a.Size != 500 {
			t.Fatalf("asset %+v", a)
		}
	})
	for _, tc := range []struct {
		name, field, file string
		status            int
		code              string
	}{
		{"too large", "file", big, 413, "file_too_large"},
		{"no file field", "video", small, 400, "invalid_request"},
		{"empty file", "file", empty, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, up := e.createVideo(tc.name)
			if r := e.upload(up, tc.field, tc.file); r.Status != tc.status || r.Code() != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			// A refused upload stores nothing: the video still waits, no
			// file is kept, and the same URL takes the file.
			if a := e.asset(id); a.Status != StatusPendingUpload || a.Size != 0 {
				t.Fatalf("asset %+v", a)
			}
			for _, f := range []string{"source.part", sourceFile} {
				if _, err := os.Stat(filepath.Join(e.svc.assetDir(id), f)); !os.IsNotExist(err) {
					t.Fatalf("%s kept: %v", f, err)
				}
			}
			var got ReceivedAnswer
			if r := e.upload(up, "file", small); r.Status != 201 {
				t.Fatalf("the URL after a refused upload: %d %s", r.Status, r.Body)
			} else {
				r.Decode(t, &got)
			}
			if got.ID != id {
				t.Fatalf("upload answer %+v, want id %s", got, id)
			}
			if r := e.upload(up, "file", small); r.Status != 410 || r.Code() != "upload_url_used" {
				t.Fatalf("reuse after the file arrived: %d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		_, up := e.createVideo("json")
		if r := e.do("", "POST", up, map[string]any{"file": "x"}); r.Status != 400 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		// Refused before use: the URL still works.
		if r := e.upload(up, "file", small); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		for _, tok := range []string{"nope", strings.Repeat("A", 43)} {
			if r := e.upload(e.srv.URL+"/media/uploads/"+tok, "file", small); r.Status != 404 {
				t.Fatalf("%s: %d %s", tok, r.Status, r.Body)
			}
		}
	})
	t.Run("multipart body over the route limit", func(t *testing.T) {
		_, up := e.createVideo("huge")
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormField("padding")
		w.Write(bytes.Repeat([]byte("p"), int(e.svc.MaxUploadBody())+10))
		mw.Close()
		req, _ := http.NewRequest("POST", up, &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if r := e.send(req); r.Status != 413 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

func TestTeardownAndCount(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	id, up := e.createVideo("v")
	e.upload(up, "file", clip(t, t.TempDir()))
	if err := e.svc.Process(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	e.createVideo("w")
	if n, _ := e.svc.Count(context.Background(), e.project); n != 2 {
		t.Fatalf("count %d", n)
	}
	if err := e.Projects.Delete(context.Background(), e.Owner, e.project); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.svc.Count(context.Background(), e.project); n != 0 {
		t.Fatalf("count after delete %d", n)
	}
	if _, err := os.Stat(e.svc.assetDir(id)); !os.IsNotExist(err) {
		t.Fatalf("files kept: %v", err)
	}
	e.must(404, "", "GET", "/media/"+id+"/master.m3u8", nil)
}
