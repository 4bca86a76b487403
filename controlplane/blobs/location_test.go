package blobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/blobs"
)

func TestParseS3URL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want blobs.S3Config // provisioned
		err  string
	}{
		{in: "s3://bucket", want: blobs.S3Config{Bucket: "bucket"}},
		{in: "s3://bucket/platform/blobs", want: blobs.S3Config{Bucket: "bucket", Prefix: "platform/blobs/"}},
		{in: "s3://my-bucket/p/?endpoint=https://127.0.0.1:7070&region=eu-west-1&path_style=true&ca_file=/etc/ca.pem&profile=ops&create_bucket=1&part_size=8388608&threads=8&timeout=30s",
			want: blobs.S3Config{Endpoint: "https://127.0.0.1:7070", Bucket: "my-bucket", Prefix: "p/", Region: "eu-west-1", PathStyle: true,
				CAFile: "/etc/ca.pem", Profile: "ops", CreateBucket: true, PartSize: 8 << 20, Threads: 8, Timeout: 30 * time.Second}},
		{in: "s3://AKIA:secret@bucket/p", err: "credentials do not go in the URL"},
		{in: "s3://bucket/p?secret_key=x", err: `unknown parameter "secret_key"`},
		{in: "s3://bucket/p?region=a&region=b", err: "given 2 times"},
		{in: "s3://bucket/p?path_style=maybe", err: "path_style"},
		{in: "s3://bucket/p?timeout=soon", err: "timeout"},
		{in: "s3://bucket/p?threads=900", err: "threads"},
		{in: "s3://bucket:9000/p", err: "want s3://BUCKET"},
		{in: "s3:bucket", err: "want s3://BUCKET"},
		{in: "http://bucket/p", err: "not an s3:// URL"},
		{in: "s3://Bad_Bucket/p", err: "bucket"},
		{in: "s3:///p", err: "bucket"},
		{in: "s3://bucket/a//b", err: "prefix"},
		{in: "s3://bucket/a/../b", err: "prefix"},
		{in: "s3://bucket/a%20b", err: "prefix"},
		{in: "s3://bucket/p?endpoint=ftp://host", err: "scheme"},
		{in: "s3://bucket/p?endpoint=http://host/path", err: "nothing else"},
		{in: "s3://bucket/p?endpoint=http://u:p@host", err: "nothing else"},
		{in: "s3://bucket/p?part_size=1024", err: "part size"},
		{in: "s3://bucket/p?endpoint=http://127.0.0.1:7070&ca_file=/ca.pem", err: "plain-HTTP"},
		{in: "s3://bucket/p?no_checksum=true", want: blobs.S3Config{Bucket: "bucket", Prefix: "p/", NoChecksum: true}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			cfg, err := blobs.ParseS3URL(tc.in)
			if err == nil {
				cfg.Provision()
				err = cfg.Validate()
			}
			if tc.err != "" {
				if !errors.Is(err, blobs.ErrBadLocation) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrBadLocation with %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") && strings.Contains(tc.in, ":secret@") {
					t.Fatalf("the error repeats the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Provision()
			want.SpoolDir = cfg.SpoolDir
			if cfg != want {
				t.Fatalf("got  %+v\nwant %+v", cfg, want)
			}
		})
	}
}

func TestS3ConfigProvisionFromEnvironment(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "https://fallback.example")
	t.Setenv("AWS_ENDPOINT_URL_S3", "https://s3.example:9000")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "ap-south-1")
	cfg := blobs.S3Config{Bucket: "bkt", Prefix: "x"}
	cfg.Provision()
	if cfg.Endpoint != "https://s3.example:9000" || cfg.Region != "ap-south-1" || cfg.Prefix != "x/" ||
		cfg.PartSize != blobs.DefaultS3PartSize || cfg.Timeout != blobs.DefaultS3Timeout || cfg.SpoolDir == "" {
		t.Fatalf("%+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = blobs.S3Config{Bucket: "bkt", Endpoint: "minio.internal:9000"} // explicit wins; bare host is HTTPS
	cfg.Provision()
	if cfg.Endpoint != "minio.internal:9000" || cfg.Validate() != nil {
		t.Fatalf("%+v", cfg)
	}
	for name, edit := range map[string]func(*blobs.S3Config){
		"half a key":       func(c *blobs.S3Config) { c.AccessKeyID = "AKIA" },
		"negative timeout": func(c *blobs.S3Config) { c.Timeout = -time.Second },
		"too many threads": func(c *blobs.S3Config) { c.Threads = 65 },
		"huge parts":       func(c *blobs.S3Config) { c.PartSize = 6 << 30 },
	} {
		c := cfg
		edit(&c)
		if err := c.Validate(); !errors.Is(err, blobs.ErrBadLocation) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestOpenBackendFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		loc string
		err string
	}{
		{loc: filepath.Join(dir, "a")},
		{loc: "file://" + filepath.Join(dir, "b")},
		{loc: "", err: "empty location"},
		{loc: "file://host/x", err: "file:///"},
		{loc: "file:///x?y=1", err: "file:///"},
		{loc: "gs://bucket", err: `unknown scheme "gs"`},
		{loc: "s3://AK:SK@bucket", err: "credentials do not go in the URL"},
	} {
		t.Run(tc.loc, func(t *testing.T) {
			b, err := blobs.OpenBackend(context.Background(), tc.loc)
			if tc.err != "" {
				if !errors.Is(err, blobs.ErrBadLocation) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := b.(*blobs.Store); !ok {
				t.Fatalf("%T", b)
			}
			if _, _, err := b.Put([]byte("x")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// FuzzParseS3URL feeds locations (operator input from flags and the
// environment) to the parser and the validator: no panic, and whatever is
// accepted names a valid bucket and prefix and carries no credentials.
func FuzzParseS3URL(f *testing.F) {
	for _, s := range []string{
		"s3://bucket", "s3://bucket/p/q?endpoint=http://127.0.0.1:7070&path_style=true",
		"s3://a:b@bucket", "s3://bucket/%2e%2e/x", "s3://bucket/p?timeout=1h&threads=3&part_size=5242880",
		"s3://bucket/p?endpoint=%zz", "s3://[::1]/x", "s3://bucket/p#frag",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := blobs.ParseS3URL(s)
		if err != nil {
			if !errors.Is(err, blobs.ErrBadLocation) {
				t.Fatalf("error not ErrBadLocation: %v", err)
			}
			return
		}
		if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
			t.Fatal("credentials from a URL")
		}
		cfg.Provision()
		if cfg.Validate() != nil {
			return
		}
		if strings.Contains(cfg.Prefix, "..") && strings.Contains("/"+cfg.Prefix, "/../") || strings.Contains(cfg.Prefix, "//") {
			t.Fatalf("accepted prefix %q", cfg.Prefix)
		}
	})
}
