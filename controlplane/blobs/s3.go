package blobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 keeps blobs in a bucket of an S3-compatible server (AWS S3, MinIO,
// Ceph RGW, Garage, versitygw) under PREFIX<2 hex>/<sha256>. It is safe for
// concurrent use, also by several processes sharing the bucket: a blob is
// written whole by one PUT (or one completed multipart upload), so a reader
// sees the whole blob or none, and identical bytes under one name make
// concurrent writers harmless.
type S3 struct {
	cfg    S3Config
	client *minio.Client
	m      *s3Metrics
}

// NewS3 connects to the bucket cfg names (provisioning cfg first) and
// checks that it exists, creating it when cfg.CreateBucket is set, so a
// wrong endpoint, bucket or credential fails the start rather than the
// first deploy.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host, secure, _ := splitEndpoint(cfg.Endpoint)
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: transport: %w", err)
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ca file: %v", ErrBadLocation, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca file %s holds no PEM certificate", ErrBadLocation, cfg.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	m := newS3Metrics()
	client, err := minio.New(host, &minio.Options{
		Creds:        s3Credentials(cfg),
		Secure:       secure,
		Transport:    counted{tr, m},
		Region:       cfg.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: %w", err)
	}
	s := &S3{cfg: cfg, client: client, m: m}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("blobs: s3: bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		if !cfg.CreateBucket {
			return nil, fmt.Errorf("blobs: s3: bucket %s does not exist at %s (create it, or set create_bucket=true)", cfg.Bucket, cfg.Endpoint)
		}
		if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			var er minio.ErrorResponse
			if !errors.As(err, &er) || (er.Code != "BucketAlreadyOwnedByYou" && er.Code != "BucketAlreadyExists") {
				return nil, fmt.Errorf("blobs: s3: create bucket %s: %w", cfg.Bucket, err)
			}
		}
	}
	return s, nil
}

// s3Credentials returns the static credentials of cfg or the AWS chain.
func s3Credentials(cfg S3Config) *credentials.Credentials {
	if cfg.AccessKeyID != "" {
		return credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{Profile: cfg.Profile},
		&credentials.IAM{Client: &http.Client{Transport: http.DefaultTransport}},
	})
}

// key is the object key of the blob named sum, which must be valid.
func (s *S3) key(sum string) string { return s.cfg.Prefix + sum[:2] + "/" + sum }

// String returns the location without secrets.
func (s *S3) String() string { return s.cfg.String() }

// call runs fn under the backend's time limit, for the methods without a
// context.
func (s *S3) call(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	return fn(ctx)
}

// s3Err turns a missing object into ErrNotFound and scopes the rest.
func s3Err(op, sum string, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.Code == "NoSuchKey" || er.StatusCode == http.StatusNotFound && er.Code != "NoSuchBucket") {
		return fmt.Errorf("%w: %s", ErrNotFound, sum)
	}
	return fmt.Errorf("blobs: s3 %s %s: %w", op, sum, err)
}

// Put stores data under its sum unless the bucket holds it already.
func (s *S3) Put(data []byte) (sum string, written bool, err error) {
	sum = Sum(data)
	err = s.call(func(ctx context.Context) error {
		written, err = s.putKnown(ctx, sum, bytes.NewReader(data), int64(len(data)))
		return err
	})
	if err != nil {
		return "", false, err
	}
	return sum, written, nil
}

// PutReader spools r to a temporary file under SpoolDir while hashing it,
// then uploads the file under its sum (in parts read straight from the file
// when larger than PartSize). Memory stays flat whatever the size.
func (s *S3) PutReader(ctx context.Context, r io.Reader) (Info, bool, error) {
	f, err := os.CreateTemp(s.cfg.SpoolDir, "platform-blob-*")
	if err != nil {
		return Info{}, false, fmt.Errorf("blobs: s3 put: spool: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, r})
	if err != nil {
		return Info{}, false, fmt.Errorf("blobs: s3 put: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	written, err := s.putKnown(ctx, sum, io.NewSectionReader(f, 0, n), n)
	if err != nil {
		return Info{}, false, err
	}
	info, err := s.Stat(ctx, sum)
	if err != nil {
		return Info{}, false, err
	}
	return info, written, nil
}

// putKnown uploads r, whose SHA-256 is sum and length size, unless the
// bucket holds sum already. A single PUT carries x-amz-checksum-sha256
// (unless NoChecksum), so the server refuses bytes that do not match their
// name.
func (s *S3) putKnown(ctx context.Context, sum string, r io.Reader, size int64) (bool, error) {
	if _, err := s.Stat(ctx, sum); err == nil {
		// Held already: renew its time for cleanup (gc.go) by copying it
		// onto itself; best effort, the writer has its blob either way.
		s.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: s.cfg.Bucket, Object: s.key(sum), ReplaceMetadata: true,
			UserMetadata: map[string]string{"Platform-Touched": "1"}},
			minio.CopySrcOptions{Bucket: s.cfg.Bucket, Object: s.key(sum)})
		return false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return false, err
	}
	opts := minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    s.cfg.PartSize,
		NumThreads:  s.cfg.Threads,
	}
	if size <= int64(s.cfg.PartSize) && !s.cfg.NoChecksum {
		raw, _ := hex.DecodeString(sum)
		opts.UserMetadata = map[string]string{"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(raw)}
	}
	if _, err := s.client.PutObject(ctx, s.cfg.Bucket, s.key(sum), r, size, opts); err != nil {
		return false, fmt.Errorf("blobs: s3 put %s: %w", sum, err)
	}
	return true, nil
}

// Has reports whether the bucket holds sum; an error reads as false.
func (s *S3) Has(sum string) bool {
	if !ValidSum(sum) {
		return false
	}
	return s.call(func(ctx context.Context) error {
		_, err := s.Stat(ctx, sum)
		return err
	}) == nil
}

// Stat returns the size and Last-Modified of the blob named sum.
func (s *S3) Stat(ctx context.Context, sum string) (Info, error) {
	if !ValidSum(sum) {
		return Info{}, ErrBadSum
	}
	oi, err := s.client.StatObject(ctx, s.cfg.Bucket, s.key(sum), minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s3Err("stat", sum, err)
	}
	return Info{Sum: sum, Size: oi.Size, ModTime: oi.LastModified}, nil
}

// Read returns the bytes of the blob named sum.
func (s *S3) Read(sum string) ([]byte, error) {
	var data []byte
	err := s.call(func(ctx context.Context) error {
		o, err := s.Get(ctx, sum)
		if err != nil {
			return err
		}
		defer o.Close()
		data = make([]byte, o.Info().Size)
		if _, err := io.ReadFull(o, data); err != nil {
			return s3Err("read", sum, err)
		}
		return nil
	})
	return data, err
}

// Head returns up to n leading bytes of the blob named sum with one ranged
// GET.
func (s *S3) Head(sum string, n int) ([]byte, error) {
	if !ValidSum(sum) {
		return nil, ErrBadSum
	}
	var data []byte
	err := s.call(func(ctx context.Context) error {
		if n <= 0 {
			_, err := s.Stat(ctx, sum)
			data = []byte{}
			return err
		}
		var opts minio.GetObjectOptions
		if err := opts.SetRange(0, int64(n)-1); err != nil {
			return fmt.Errorf("blobs: s3 head %s: %w", sum, err)
		}
		o, err := s.client.GetObject(ctx, s.cfg.Bucket, s.key(sum), opts)
		if err != nil {
			return s3Err("head", sum, err)
		}
		defer o.Close()
		data, err = io.ReadAll(io.LimitReader(o, int64(n)))
		var er minio.ErrorResponse
		if errors.As(err, &er) && er.Code == "InvalidRange" {
			// An empty blob has no byte 0.
			_, err = s.Stat(ctx, sum)
			data = []byte{}
		}
		if err != nil {
			return s3Err("head", sum, err)
		}
		return nil
	})
	return data, err
}

// Get opens the blob named sum. The first GET is sent now, so a missing
// blob is ErrNotFound here; Seek and ReadAt send ranged GETs.
func (s *S3) Get(ctx context.Context, sum string) (Object, error) {
	if !ValidSum(sum) {
		return nil, ErrBadSum
	}
	o, err := s.client.GetObject(ctx, s.cfg.Bucket, s.key(sum), minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Err("get", sum, err)
	}
	oi, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, s3Err("get", sum, err)
	}
	return s3Object{o, Info{Sum: sum, Size: oi.Size, ModTime: oi.LastModified}}, nil
}

// Delete removes the blob named sum; S3 answers a missing key with
// success, which is the file store's rule too.
func (s *S3) Delete(ctx context.Context, sum string) error {
	if !ValidSum(sum) {
		return ErrBadSum
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.key(sum), minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(s3Err("delete", sum, err), ErrNotFound) {
			return nil
		}
		return fmt.Errorf("blobs: s3 delete %s: %w", sum, err)
	}
	return nil
}

// List calls fn for every blob under the prefix, skipping keys that are
// not PREFIX<2 hex>/<sha256>.
func (s *S3) List(ctx context.Context, fn func(Info) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for oi := range s.client.ListObjectsIter(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix, Recursive: true}) {
		if oi.Err != nil {
			return fmt.Errorf("blobs: s3 list: %w", oi.Err)
		}
		rest := strings.TrimPrefix(oi.Key, s.cfg.Prefix)
		if len(rest) != 67 || rest[2] != '/' || !ValidSum(rest[3:]) || rest[:2] != rest[3:5] {
			continue
		}
		if err := fn(Info{Sum: rest[3:], Size: oi.Size, ModTime: oi.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// s3Object is an open S3 object with its Info.
type s3Object struct {
	*minio.Object
	info Info
}

func (o s3Object) Info() Info { return o.info }
