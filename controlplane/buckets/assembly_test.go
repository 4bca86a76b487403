package buckets_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// These tests run the area inside the whole control plane
// (controlplane/cptest): routes, authentication, the S3 surface in front
// of the route table, the blob cleanup job and project deletion as
// assembled for production.

// TestAssembled: a bucket and an access key made through the API; objects
// put and read with minio-go at the S3 host's root (a key whose "//" and
// ".." segments the route table's mux would redirect) and under /s3; the
// daily blob cleanup keeps the objects' blobs; deleting the project
// removes the bucket and revokes its keys.
func TestAssembled(t *testing.T) {
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.S3Host = "s3.test" }})
	env.Clock.Set(time.Now().UTC()) // S3 clients sign with the real time
	project := env.CreateProject("app")
	var b buckets.BucketAnswer
	env.Owner.Must(201, "POST", "/api/projects/"+project+"/buckets", map[string]any{"name": "files"}).JSON(t, &b)
	var ck buckets.CreatedKey
	env.Owner.Must(201, "POST", "/api/projects/"+project+"/storage-keys", map[string]any{"name": "app"}).JSON(t, &ck)

	// minio-go at the S3 host: its requests carry Host s3.test:<port> and
	// reach the test server.
	u, _ := url.Parse(env.Server.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, u.Host)
	}}
	c, err := minio.New("s3.test:"+port, &minio.Options{Creds: credentials.NewStaticV4(ck.Key.ID, ck.SecretAccessKey, ""),
		Transport: tr, Region: "us-east-1", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := []byte("kept through the cleanup")
	for _, key := range []string{"plain.txt", "a//b/../c"} {
		if _, err := c.PutObject(ctx, "files", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
		obj, err := c.GetObject(ctx, "files", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get %q: %q, %v", key, got, err)
		}
	}
	// Under /s3 on the API's own address, an unsigned request is S3's
	// refusal, not the route table's.
	resp, err := http.Get(env.Server.URL + "/s3/files/plain.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "<Code>AccessDenied</Code>") {
		t.Fatalf("/s3 unsigned: %d %s", resp.StatusCode, body)
	}

	// Two days on, the daily blob cleanup runs: the objects' blobs stay.
	env.Clock.Advance(48 * time.Hour)
	if _, err := env.CP.Jobs.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	env.Clock.Set(time.Now().UTC())
	r := env.Owner.Must(200, "GET", "/api/buckets/"+b.Bucket.ID+"/objects/plain.txt", nil)
	if !bytes.Equal(r.Body, data) {
		t.Fatalf("after the cleanup: %q", r.Body)
	}

	// The project goes: its bucket with it, its key no longer signs.
	env.Owner.Must(200, "DELETE", "/api/projects/"+project, nil)
	env.Owner.Must(404, "GET", "/api/buckets/"+b.Bucket.ID, nil)
	if _, err := c.ListBuckets(ctx); minio.ToErrorResponse(err).Code != "InvalidAccessKeyId" {
		t.Fatalf("after the project's deletion: %v", err)
	}
}
