package blobs_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/blobs/blobstest"
)

// TestS3 covers what only the S3 backend has: its key layout, the
// server-checked SHA-256, prefixes sharing a bucket, and refusals at start.
func TestS3(t *testing.T) {
	srv := blobstest.StartS3(t)
	ctx := context.Background()

	t.Run("layout is the file store's, under the prefix", func(t *testing.T) {
		b := srv.Backend(t, "inst-a/blobs")
		sum, _, err := b.Put([]byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		_, bucket := blobs.ClientOf(b)
		p := filepath.Join(srv.Dir, bucket, "inst-a", "blobs", sum[:2], sum)
		if got, err := os.ReadFile(p); err != nil || string(got) != "hello" {
			t.Fatalf("object file %s: %q %v", p, got, err)
		}
	})

	t.Run("single PUTs carry a SHA-256 the server checks", func(t *testing.T) {
		b := srv.Backend(t, "")
		sum, _, err := b.Put([]byte("checked"))
		if err != nil {
			t.Fatal(err)
		}
		client, bucket := blobs.ClientOf(b)
		oi, err := client.StatObject(ctx, bucket, sum[:2]+"/"+sum, minio.StatObjectOptions{Checksum: true})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := hex.DecodeString(sum)
		if oi.ChecksumSHA256 != base64.StdEncoding.EncodeToString(raw) {
			t.Fatalf("stored checksum %q", oi.ChecksumSHA256)
		}
		// A body that does not match the declared SHA-256 is refused.
		opts := minio.PutObjectOptions{UserMetadata: map[string]string{"X-Amz-Checksum-Sha256": oi.ChecksumSHA256}}
		if _, err := client.PutObject(ctx, bucket, "other", strings.NewReader("tampered"), 8, opts); err == nil {
			t.Fatal("the server stored bytes that do not match their checksum")
		}
	})

	t.Run("prefixes in one bucket do not see each other", func(t *testing.T) {
		cfg := srv.Config("shared-bucket", "a")
		a, err := blobs.NewS3(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Prefix = "b/"
		b, err := blobs.NewS3(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := a.Put([]byte("only in a"))
		if err != nil {
			t.Fatal(err)
		}
		// A stray object under the prefix is not a blob.
		client, bucket := blobs.ClientOf(a)
		if _, err := client.PutObject(ctx, bucket, "a/notes.txt", strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		if b.Has(sum) {
			t.Fatal("prefix b sees a's blob")
		}
		var listed []string
		for _, be := range []*blobs.S3{a, b} {
			if err := be.List(ctx, func(in blobs.Info) error { listed = append(listed, be.String()+" "+in.Sum); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if len(listed) != 1 || !strings.HasSuffix(listed[0], sum) || !strings.Contains(listed[0], "s3://shared-bucket/a/") {
			t.Fatalf("listed %v", listed)
		}
	})

	for _, tc := range []struct {
		name string
		edit func(*blobs.S3Config)
		want string
	}{
		{"missing bucket without create_bucket", func(c *blobs.S3Config) { c.Bucket, c.CreateBucket = "never-made", false }, "does not exist"},
		{"wrong secret", func(c *blobs.S3Config) { c.SecretAccessKey = "wrong" }, "bucket"},
		{"unknown access key", func(c *blobs.S3Config) { c.AccessKeyID = "nobody" }, "bucket"},
		{"nothing listening", func(c *blobs.S3Config) { c.Endpoint = "http://127.0.0.1:1" }, "bucket"},
	} {
		t.Run("refused at start: "+tc.name, func(t *testing.T) {
			cfg := srv.Config("start-checks", "")
			tc.edit(&cfg)
			ctx, cancel := context.WithTimeout(ctx, time.Second) // minio-go retries a dead endpoint until ctx ends
			defer cancel()
			if _, err := blobs.NewS3(ctx, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewS3 = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}

	t.Run("OpenBackend s3:// with AWS environment credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
		b, err := blobs.OpenBackend(ctx, "s3://from-env/platform?path_style=true&create_bucket=true")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b.(*blobs.S3); !ok {
			t.Fatalf("OpenBackend = %T", b)
		}
		sum, written, err := b.Put([]byte("via env"))
		if err != nil || !written || !b.Has(sum) {
			t.Fatalf("Put = %v %v", written, err)
		}
		if s := b.String(); strings.Contains(s, srv.SecretKey) || !strings.Contains(s, "s3://from-env/platform/") {
			t.Fatalf("String() = %q", s)
		}
	})

	t.Run("metrics count requests", func(t *testing.T) {
		b := srv.Backend(t, "")
		if _, _, err := b.Put([]byte("counted")); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewPedanticRegistry()
		for _, c := range b.Collectors() {
			reg.MustRegister(c)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		// NewS3 checked the bucket and made it; Put asked HEAD (404) then PUT.
		got := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				if f.GetName() == "platform_blobs_s3_requests_total" {
					got[label(m, "method")+" "+label(m, "class")] = m.GetCounter().GetValue()
				}
			}
		}
		if got["PUT 2xx"] < 2 || got["HEAD 4xx"] < 1 {
			t.Fatalf("requests %v", got)
		}
	})

	t.Run("timeout bounds calls without a context", func(t *testing.T) {
		cfg := srv.Config("timeouts", "")
		cfg.Timeout = time.Nanosecond
		b, err := blobs.NewS3(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Put([]byte("late")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Put = %v, want a deadline error", err)
		}
	})
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestS3TLS reaches versitygw over HTTPS with a private CA named by
// ca_file, and is refused without it.
func TestS3TLS(t *testing.T) {
	srv := blobstest.StartS3TLS(t)
	ctx := context.Background()
	cfg := srv.Config("tls-bucket", "p")
	b, err := blobs.NewS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, written, err := b.Put([]byte("over tls"))
	if err != nil || !written {
		t.Fatalf("Put = %v %v", written, err)
	}
	if got, err := b.Read(sum); err != nil || string(got) != "over tls" {
		t.Fatalf("Read = %q %v", got, err)
	}
	cfg.CAFile = ""
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var uerr x509.UnknownAuthorityError
	if _, err := blobs.NewS3(ctx, cfg); !errors.As(err, &uerr) {
		t.Fatalf("NewS3 without the CA = %v, want an unknown-authority error", err)
	}
	cfg.CAFile = filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(cfg.CAFile, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.NewS3(ctx, cfg); !errors.Is(err, blobs.ErrBadLocation) {
		t.Fatalf("NewS3 with a bad CA file = %v", err)
	}
}
