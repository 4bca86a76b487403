package blobs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Defaults of S3Config.
const (
	// DefaultS3Endpoint is AWS S3 (minio-go picks the regional host).
	DefaultS3Endpoint = "https://s3.amazonaws.com"
	// DefaultS3PartSize is the multipart part size: S3's minimum is 5 MiB;
	// larger parts mean fewer requests.
	DefaultS3PartSize = 16 << 20
	// DefaultS3Timeout bounds each call made without a context.
	DefaultS3Timeout = 5 * time.Minute
	// DefaultS3Threads is how many parts of one upload are sent at once.
	DefaultS3Threads = 4
)

// ErrBadLocation is returned for a blob location (OpenBackend, ParseS3URL)
// or an S3Config that cannot work.
var ErrBadLocation = errors.New("blobs: bad location")

// S3Config says where an S3 backend keeps blobs and how it reaches them. It
// follows the AWS SDK's conventions: what is not set comes from the same
// environment variables and files the AWS CLI reads, so an operator
// configures it the way they configure any S3 client. The zero value (with a
// Bucket) is AWS S3 with the default credential chain.
type S3Config struct {
	// Endpoint is the S3 server: a URL ("https://minio.internal:9000",
	// "http://127.0.0.1:7070") or a host[:port] reached over HTTPS. Empty:
	// $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL, then AWS S3.
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket holds the blobs. Required.
	Bucket string `json:"bucket"`
	// Prefix is prepended to every key ("platform/blobs/"), so one bucket
	// can serve several installations. A blob's key is
	// PREFIX<first two hex digits>/<sha256>: the file store's layout, so
	// `aws s3 sync DATA/blobs s3://BUCKET/PREFIX` migrates a directory.
	Prefix string `json:"prefix,omitempty"`
	// Region is the bucket's region. Empty: $AWS_REGION, then
	// $AWS_DEFAULT_REGION, then asked of the server (GetBucketLocation).
	Region string `json:"region,omitempty"`
	// PathStyle addresses the bucket as ENDPOINT/BUCKET rather than
	// BUCKET.ENDPOINT; MinIO, Ceph, Garage and versitygw usually want it.
	// Unset, minio-go decides: virtual-host style on AWS, path style elsewhere.
	PathStyle bool `json:"path_style,omitempty"`
	// CAFile is a PEM bundle of certificate authorities trusted besides the
	// system's, for a server with a private certificate.
	CAFile string `json:"ca_file,omitempty"`
	// AccessKeyID, SecretAccessKey and SessionToken are static credentials.
	// Empty: the AWS chain, in order: $AWS_ACCESS_KEY_ID /
	// $AWS_SECRET_ACCESS_KEY / $AWS_SESSION_TOKEN, the shared files
	// (~/.aws/credentials and ~/.aws/config, profile Profile or $AWS_PROFILE),
	// then the instance or container role (EC2 IMDS, ECS, EKS web identity).
	// They never go in a location URL, which shows in ps and logs.
	AccessKeyID     string `json:"-"`
	SecretAccessKey string `json:"-"`
	SessionToken    string `json:"-"`
	// Profile selects a profile of the shared credentials files.
	Profile string `json:"profile,omitempty"`
	// SpoolDir is where PutReader hashes a stream before uploading it under
	// its sum. Empty: os.TempDir().
	SpoolDir string `json:"spool_dir,omitempty"`
	// PartSize is the multipart part size in bytes; a blob up to this size
	// goes up in one PUT whose SHA-256 the server checks. Zero:
	// DefaultS3PartSize; at least 5 MiB.
	PartSize uint64 `json:"part_size,omitempty"`
	// NoChecksum leaves out the x-amz-checksum-sha256 header of single
	// PUTs, for an older server that refuses it (servers that do not know
	// it ignore it).
	NoChecksum bool `json:"no_checksum,omitempty"`
	// Threads is how many parts of one upload go at once. Zero:
	// DefaultS3Threads.
	Threads uint `json:"threads,omitempty"`
	// Timeout bounds each call made without a context (Put, Has, Read,
	// Head). Zero: DefaultS3Timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// CreateBucket creates the bucket at start when it does not exist
	// (development servers); otherwise a missing bucket fails the start.
	CreateBucket bool `json:"create_bucket,omitempty"`
}

// Provision fills what is unset from the environment and the defaults.
func (c *S3Config) Provision() {
	if c.Endpoint == "" {
		c.Endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultS3Endpoint
	}
	if c.Region == "" {
		c.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.SpoolDir == "" {
		c.SpoolDir = os.TempDir()
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultS3PartSize
	}
	if c.Threads == 0 {
		c.Threads = DefaultS3Threads
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultS3Timeout
	}
}

// Validate reports what in a provisioned config cannot work.
func (c *S3Config) Validate() error {
	if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		return fmt.Errorf("%w: bucket %q: %v", ErrBadLocation, c.Bucket, err)
	}
	if _, secure, err := splitEndpoint(c.Endpoint); err != nil {
		return err
	} else if c.CAFile != "" && !secure {
		return fmt.Errorf("%w: ca_file given for the plain-HTTP endpoint %s", ErrBadLocation, c.Endpoint)
	}
	if err := validPrefix(c.Prefix); err != nil {
		return err
	}
	if c.PartSize < 5<<20 || c.PartSize > 5<<30 {
		return fmt.Errorf("%w: part size %d is outside S3's 5 MiB to 5 GiB", ErrBadLocation, c.PartSize)
	}
	if c.Threads > 64 {
		return fmt.Errorf("%w: %d upload threads, at most 64", ErrBadLocation, c.Threads)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrBadLocation)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("%w: an access key id needs its secret and the other way round", ErrBadLocation)
	}
	return nil
}

// String describes the config for logs: the location without secrets.
func (c *S3Config) String() string {
	return "s3://" + c.Bucket + "/" + c.Prefix + " at " + c.Endpoint
}

// splitEndpoint returns the host[:port] of an endpoint and whether it is
// reached over TLS.
func splitEndpoint(ep string) (host string, secure bool, err error) {
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("%w: endpoint %q: %v", ErrBadLocation, ep, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false, fmt.Errorf("%w: endpoint %q: scheme must be http or https", ErrBadLocation, ep)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false, fmt.Errorf("%w: endpoint %q: want scheme://host[:port] and nothing else", ErrBadLocation, ep)
	}
	return u.Host, u.Scheme == "https", nil
}

// validPrefix accepts "" or slash-separated segments ending in "/", each
// non-empty, not "." or "..", and of printable ASCII.
func validPrefix(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > 512 || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("%w: prefix %q: at most 512 bytes, ending in /", ErrBadLocation, p)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: prefix %q: empty, . or .. segment", ErrBadLocation, p)
		}
		for i := 0; i < len(seg); i++ {
			if seg[i] <= ' ' || seg[i] >= 0x7f || seg[i] == '\\' {
				return fmt.Errorf("%w: prefix %q: only printable ASCII without spaces or backslashes", ErrBadLocation, p)
			}
		}
	}
	return nil
}

// ParseS3URL reads an S3 location:
//
//	s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true&ca_file=PATH&profile=P&create_bucket=true&no_checksum=true&part_size=BYTES&threads=N&timeout=DURATION]
//
// Credentials are refused in the URL (s3://KEY:SECRET@...): they come from
// the environment or the AWS files (see S3Config). Unknown parameters are
// refused so that a typo does not silently fall back to a default. The
// result is not provisioned.
func ParseS3URL(s string) (S3Config, error) {
	var c S3Config
	u, err := url.Parse(s)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadLocation, err)
	}
	if u.Scheme != "s3" {
		return c, fmt.Errorf("%w: %q is not an s3:// URL", ErrBadLocation, redactURL(u))
	}
	if u.User != nil {
		return c, fmt.Errorf("%w: credentials do not go in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or use a profile", ErrBadLocation)
	}
	if u.Opaque != "" || u.Fragment != "" || u.Port() != "" {
		return c, fmt.Errorf("%w: want s3://BUCKET/PREFIX?PARAMS", ErrBadLocation)
	}
	c.Bucket = u.Host
	c.Prefix = strings.TrimPrefix(u.Path, "/")
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return c, fmt.Errorf("%w: query: %v", ErrBadLocation, err)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return c, fmt.Errorf("%w: parameter %s given %d times", ErrBadLocation, k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			c.Endpoint = v
		case "region":
			c.Region = v
		case "path_style":
			c.PathStyle, err = strconv.ParseBool(v)
		case "ca_file":
			c.CAFile = v
		case "profile":
			c.Profile = v
		case "no_checksum":
			c.NoChecksum, err = strconv.ParseBool(v)
		case "create_bucket":
			c.CreateBucket, err = strconv.ParseBool(v)
		case "part_size":
			c.PartSize, err = strconv.ParseUint(v, 10, 64)
		case "threads":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 8)
			c.Threads = uint(n)
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
		default:
			return c, fmt.Errorf("%w: unknown parameter %q", ErrBadLocation, k)
		}
		if err != nil {
			return c, fmt.Errorf("%w: parameter %s: %v", ErrBadLocation, k, err)
		}
	}
	return c, nil
}

// redactURL prints u without its password.
func redactURL(u *url.URL) string { return u.Redacted() }

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
