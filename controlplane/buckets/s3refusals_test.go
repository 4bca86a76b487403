package buckets

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// sha256Hasher adapts crypto/sha256 to the hasher minio-go's streaming
// signer takes.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// s3Call is a request signed with minio-go's signer (the client's own
// code): header is set before signing, after runs on the signed request.
type s3Call struct {
	method, path string
	body         []byte
	id, secret   string
	header       []string
	after        func(r *http.Request)
	unsigned     bool // no signature at all
	noPayload    bool // no x-amz-content-sha256
}

// s3Raw sends c to the fixture's S3 server and returns the answer.
func (f *fixture) s3Raw(c s3Call) response {
	f.t.Helper()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, f.s3.URL+c.path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if !c.noPayload {
		h := sha256.Sum256(c.body)
		req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(h[:]))
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	if !c.unsigned {
		req = signer.SignV4(*req, c.id, c.secret, "", "us-east-1")
	}
	if c.after != nil {
		c.after(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// TestS3Refusals: every refusal of the S3 surface answers S3's error code
// and status (a 4xx, which clients do not retry) and stores nothing:
// authentication (anonymous, unknown, revoked or wrong secrets, headers
// added or changed after signing, session tokens, clocks too far off,
// malformed signatures, expired or over-long presigned URLs), access
// (read-only keys, keys limited to other buckets, other projects'
// buckets), limits (key length, object size, the plan's bytes), digests
// (Content-MD5, x-amz-content-sha256, trailer checksums, chunk
// signatures), multipart errors, and calls not offered.
func TestS3Refusals(t *testing.T) { eachEngine(t, testS3Refusals) }

func testS3Refusals(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	f := newFixture(t, e, Config{MaxPutBytes: 1000, MinPartBytes: 10, BytesPerPlan: map[plans.Name]int64{plans.Hobby: 1000}}, time.Now().UTC())
	f.bucket("main", false)
	f.bucket("second", false)
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "elsewhere"})
	full := f.key(map[string]any{"name": "full"})
	ro := f.key(map[string]any{"name": "ro", "readOnly": true})
	limited := f.key(map[string]any{"name": "limited", "buckets": []string{"second"}})
	revoked := f.key(map[string]any{"name": "revoked"})
	f.must(http.StatusOK, "dev", "DELETE", "/api/storage-keys/"+revoked.Key.ID, nil)
	id, secret := full.Key.ID, full.SecretAccessKey
	if r := f.s3Raw(s3Call{method: "PUT", path: "/main/kept", body: []byte("kept"), id: id, secret: secret}); r.Status != 200 {
		t.Fatalf("a valid put: %d %s", r.Status, r.Body)
	}
	wrongMD5 := md5.Sum([]byte("other"))
	chunked := func(r *http.Request) { r.ContentLength = -1; r.Body = io.NopCloser(strings.NewReader("abc")) }
	for _, c := range []struct {
		name   string
		call   s3Call
		status int
		code   string
	}{
		{"anonymous", s3Call{method: "GET", path: "/main/kept", unsigned: true}, 403, "AccessDenied"},
		{"wrong secret", s3Call{method: "GET", path: "/main/kept", id: id, secret: strings.Repeat("x", 40)}, 403, "SignatureDoesNotMatch"},
		{"unknown access key", s3Call{method: "GET", path: "/main/kept", id: "SVCNOTAKEY0000000000", secret: secret}, 403, "InvalidAccessKeyId"},
		{"revoked access key", s3Call{method: "GET", path: "/main/kept", id: revoked.Key.ID, secret: revoked.SecretAccessKey}, 403, "InvalidAccessKeyId"},
		{"session token", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret, header: []string{"X-Amz-Security-Token", "t"}}, 400, "InvalidToken"},
		{"header added after signing", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret,
			after: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Evil", "1") }}, 403, "AccessDenied"},
		{"signed header changed", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret, header: []string{"Content-Type", "text/plain"},
			after: func(r *http.Request) { r.Header.Set("Content-Type", "text/html") }}, 403, "SignatureDoesNotMatch"},
		{"path changed", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret,
			after: func(r *http.Request) { r.URL.Path = "/second/kept" }}, 403, "SignatureDoesNotMatch"},
		{"query added", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret,
			after: func(r *http.Request) { r.URL.RawQuery = "response-content-type=text%2Fhtml" }}, 403, "SignatureDoesNotMatch"},
		{"body changed", s3Call{method: "PUT", path: "/main/k", body: []byte("signed"), id: id, secret: secret,
			after: func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader("sent!!")) }}, 400, "XAmzContentSHA256Mismatch"},
		{"malformed authorization", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret,
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x") }}, 400, "AuthorizationHeaderMalformed"},
		{"signature version 2", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret,
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS "+id+":c2ln") }}, 400, "AuthorizationHeaderMalformed"},
		{"no x-amz-date", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret,
			after: func(r *http.Request) { r.Header.Del("X-Amz-Date") }}, 403, "AccessDenied"},
		{"no payload hash", s3Call{method: "GET", path: "/main/kept", id: id, secret: secret, noPayload: true}, 400, "InvalidRequest"},
		{"key too long", s3Call{method: "PUT", path: "/main/" + strings.Repeat("k", MaxKeyBytes+1), body: []byte("x"), id: id, secret: secret}, 400, "KeyTooLongError"},
		{"control character in key", s3Call{method: "PUT", path: "/main/a%01b", body: []byte("x"), id: id, secret: secret}, 400, "InvalidArgument"},
		{"object too large", s3Call{method: "PUT", path: "/main/k", body: make([]byte, 1001), id: id, secret: secret}, 400, "EntityTooLarge"},
		{"plan's bytes", s3Call{method: "PUT", path: "/main/k", body: make([]byte, 1000), id: id, secret: secret}, 403, "QuotaExceeded"},
		{"no length", s3Call{method: "PUT", path: "/main/k", body: []byte("abc"), id: id, secret: secret, header: []string{"X-Amz-Content-Sha256", unsignedPayload},
			after: chunked}, 411, "MissingContentLength"},
		{"Content-MD5 of other bytes", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret,
			header: []string{"Content-Md5", base64.StdEncoding.EncodeToString(wrongMD5[:])}}, 400, "BadDigest"},
		{"Content-MD5 malformed", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret, header: []string{"Content-Md5", "abc"}}, 400, "InvalidDigest"},
		{"checksum header of other bytes", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret,
			header: []string{"X-Amz-Checksum-Crc32", "AAAAAA=="}}, 400, "BadDigest"},
		{"unknown checksum", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret,
			header: []string{"X-Amz-Checksum-Md4", "AAAAAA=="}}, 400, "InvalidArgument"},
		{"no such bucket", s3Call{method: "GET", path: "/nope-bucket/kept", id: id, secret: secret}, 404, "NoSuchBucket"},
		{"another project's bucket", s3Call{method: "GET", path: "/elsewhere/kept", id: id, secret: secret}, 404, "NoSuchBucket"},
		{"invalid bucket name", s3Call{method: "GET", path: "/No/kept", id: id, secret: secret}, 400, "InvalidBucketName"},
		{"no such key", s3Call{method: "GET", path: "/main/missing", id: id, secret: secret}, 404, "NoSuchKey"},
		{"read-only key writes", s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: ro.Key.ID, secret: ro.SecretAccessKey}, 403, "AccessDenied"},
		{"read-only key deletes", s3Call{method: "DELETE", path: "/main/kept", id: ro.Key.ID, secret: ro.SecretAccessKey}, 403, "AccessDenied"},
		{"limited key, other bucket", s3Call{method: "GET", path: "/main/kept", id: limited.Key.ID, secret: limited.SecretAccessKey}, 403, "AccessDenied"},
		{"bucket creation", s3Call{method: "PUT", path: "/newbucket", id: id, secret: secret}, 501, "NotImplemented"},
		{"acl", s3Call{method: "GET", path: "/main/kept?acl", id: id, secret: secret}, 501, "NotImplemented"},
		{"list objects v1", s3Call{method: "GET", path: "/main", id: id, secret: secret}, 501, "NotImplemented"},
		{"versions", s3Call{method: "GET", path: "/main/kept?versionId=v1", id: id, secret: secret}, 501, "NotImplemented"},
		{"post without sub-resource", s3Call{method: "POST", path: "/main/kept", id: id, secret: secret}, 405, "MethodNotAllowed"},
		{"unknown upload part", s3Call{method: "PUT", path: "/main/k?partNumber=1&uploadId=upl_nope", body: []byte("x"), id: id, secret: secret}, 404, "NoSuchUpload"},
		{"complete unknown upload", s3Call{method: "POST", path: "/main/k?uploadId=upl_nope",
			body: []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`), id: id, secret: secret}, 404, "NoSuchUpload"},
		{"abort unknown upload", s3Call{method: "DELETE", path: "/main/k?uploadId=upl_nope", id: id, secret: secret}, 404, "NoSuchUpload"},
		{"delete objects malformed", s3Call{method: "POST", path: "/main?delete", body: []byte("<Delete>"), id: id, secret: secret}, 400, "MalformedXML"},
		{"bad max-keys", s3Call{method: "GET", path: "/main?list-type=2&max-keys=x", id: id, secret: secret}, 400, "InvalidArgument"},
		{"bad continuation token", s3Call{method: "GET", path: "/main?list-type=2&continuation-token=%21", id: id, secret: secret}, 400, "InvalidArgument"},
		{"copy onto itself", s3Call{method: "PUT", path: "/main/kept", id: id, secret: secret, header: []string{"X-Amz-Copy-Source", "/main/kept"}}, 400, "InvalidRequest"},
		{"copy from a bucket the key does not reach", s3Call{method: "PUT", path: "/second/k", id: limited.Key.ID, secret: limited.SecretAccessKey,
			header: []string{"X-Amz-Copy-Source", "/main/kept"}}, 403, "AccessDenied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.s3Raw(c.call)
			if r.Status != c.status || (c.call.method != "HEAD" && xmlCode(r.Body) != c.code) {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, xmlCode(r.Body), c.status, c.code, r.Body)
			}
			if r.Header.Get("X-Amz-Request-Id") == "" {
				t.Error("no request id")
			}
		})
	}

	// Presigned URLs: too long a life, both kinds of signature at once.
	presign := func(expires int64) *http.Request {
		req, _ := http.NewRequest("GET", f.s3.URL+"/main/kept", nil)
		return signer.PreSignV4(*req, id, secret, "", "us-east-1", expires)
	}
	if r := doReq(t, presign(int64(MaxSignedURLTTL/time.Second)+1)); r.Status != 400 || xmlCode(r.Body) != "AuthorizationQueryParametersError" {
		t.Fatalf("presigned for 8 days: %d %s", r.Status, r.Body)
	}
	both := presign(60)
	both.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+id+"/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature="+strings.Repeat("0", 64))
	if r := doReq(t, both); r.Status != 400 || xmlCode(r.Body) != "InvalidArgument" {
		t.Fatalf("signed twice: %d %s", r.Status, r.Body)
	}

	// The server's clock 20 minutes away from the client's.
	f.clk.Set(time.Now().UTC().Add(20 * time.Minute))
	if r := f.s3Raw(s3Call{method: "GET", path: "/main/kept", id: id, secret: secret}); r.Status != 403 || xmlCode(r.Body) != "RequestTimeTooSkewed" {
		t.Fatalf("skewed: %d %s", r.Status, r.Body)
	}
	f.clk.Set(time.Now().UTC())

	// A trailer checksum that does not match the bytes (unsigned trailer).
	req, _ := http.NewRequest("PUT", f.s3.URL+"/main/trailer", bytes.NewReader([]byte("trailer body")))
	req.ContentLength = 12
	req.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrailer)
	req = signer.SignV4Trailer(*req, id, secret, "", "us-east-1", http.Header{"x-amz-checksum-crc32": {"AAAAAA=="}})
	if r := doReq(t, req); r.Status != 400 || xmlCode(r.Body) != "BadDigest" {
		t.Fatalf("wrong trailer checksum: %d %s", r.Status, r.Body)
	}

	// Multipart errors, through minio-go's Core calls.
	core := minio.Core{Client: minioClient(t, f.s3.URL, full, nil, false)}
	up, err := core.NewMultipartUpload(ctx, "main", "parts", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	small, err := core.PutObjectPart(ctx, "main", "parts", up, 1, strings.NewReader("tiny"), 4, minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big, err := core.PutObjectPart(ctx, "main", "parts", up, 2, strings.NewReader("twelve bytes"), 12, minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		parts []minio.CompletePart
		code  string
	}{
		{"small part not last", []minio.CompletePart{{PartNumber: 1, ETag: small.ETag}, {PartNumber: 2, ETag: big.ETag}}, "EntityTooSmall"},
		{"wrong etag", []minio.CompletePart{{PartNumber: 2, ETag: small.ETag}}, "InvalidPart"},
		{"part never sent", []minio.CompletePart{{PartNumber: 3, ETag: small.ETag}}, "InvalidPart"},
		{"out of order", []minio.CompletePart{{PartNumber: 2, ETag: big.ETag}, {PartNumber: 1, ETag: small.ETag}}, "InvalidPartOrder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := core.CompleteMultipartUpload(ctx, "main", "parts", up, c.parts, minio.PutObjectOptions{})
			if s3Code(err) != c.code {
				t.Fatalf("complete: %v, want %s", err, c.code)
			}
		})
	}
	if _, err := core.PutObjectPart(ctx, "main", "parts", up, MaxParts+1, strings.NewReader("x"), 1, minio.PutObjectPartOptions{}); err == nil {
		t.Fatal("part 10001 accepted")
	}
	if _, err := core.ListObjectParts(ctx, "main", "other-key", up, 0, 100); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("an upload under another key: %v", err)
	}

	// A project in teardown: reads and deletes only.
	f.prj.SetStatus("prj_a", projects.StatusTeardownFailed)
	if r := f.s3Raw(s3Call{method: "PUT", path: "/main/k", body: []byte("x"), id: id, secret: secret}); r.Status != 409 || xmlCode(r.Body) != "OperationAborted" {
		t.Fatalf("put in teardown: %d %s", r.Status, r.Body)
	}
	if r := f.s3Raw(s3Call{method: "GET", path: "/main/kept", id: id, secret: secret}); r.Status != 200 || string(r.Body) != "kept" {
		t.Fatalf("get in teardown: %d %s", r.Status, r.Body)
	}
	f.prj.SetStatus("prj_a", projects.StatusActive)

	// Nothing refused was stored: only the first object.
	if n := f.count("storage_objects"); n != 1 {
		t.Fatalf("objects after refusals: %d, want 1", n)
	}
}

// doReq sends a prepared request.
func doReq(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// TestS3Prefix: mounted under a path prefix, the surface checks
// signatures over the whole path, as SDKs that take an endpoint with a
// path sign it; paths outside the prefix are not its own.
func TestS3Prefix(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{}, time.Now().UTC())
	f.bucket("main", false)
	ck := f.key(map[string]any{"name": "k"})
	f.s3.Config.Handler = f.svc.S3Handler("/s3/")
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/s3/main/a%20file", 200, ""},
		{"/s3/main?list-type=2", 200, ""},
		{"/main/a", 404, "NoSuchBucket"},
		{"/s3x/main/a", 404, "NoSuchBucket"},
	} {
		t.Run(c.path, func(t *testing.T) {
			method, body := "GET", []byte(nil)
			if c.path == "/s3/main/a%20file" {
				method, body = "PUT", []byte("prefixed")
			}
			r := f.s3Raw(s3Call{method: method, path: c.path, body: body, id: ck.Key.ID, secret: ck.SecretAccessKey})
			if r.Status != c.status || (c.code != "" && xmlCode(r.Body) != c.code) {
				t.Fatalf("status %d %s, want %d %s", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	if _, err := getObject(context.Background(), f.db, bucketID(t, f, "main"), "a file"); err != nil {
		t.Fatalf("the prefixed put stored nothing: %v", err)
	}
}

// TestS3TamperedChunk: a chunk of an aws-chunked body altered in transit
// no longer matches its signature: the request is refused and nothing is
// stored, not even an unreferenced blob.
func TestS3TamperedChunk(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{}, time.Now().UTC())
	f.bucket("main", false)
	ck := f.key(map[string]any{"name": "k"})
	id, secret := ck.Key.ID, ck.SecretAccessKey
	// A chunk altered in transit: its signature no longer matches.
	data := bytes.Repeat([]byte("d"), 100_000)
	req, _ := http.NewRequest("PUT", f.s3.URL+"/main/tampered", bytes.NewReader(data))
	req = signer.StreamingSignV4(req, id, secret, "", "us-east-1", int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	signed, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(signed, []byte("dddd")) + 70_000 // inside the second chunk
	signed[i] = 'e'
	req.Body = io.NopCloser(bytes.NewReader(signed))
	if r := doReq(t, req); r.Status != 403 || xmlCode(r.Body) != "SignatureDoesNotMatch" {
		t.Fatalf("tampered chunk: %d %s", r.Status, r.Body)
	}

	if n, b := f.count("storage_objects"), f.blobCount(); n != 0 || b != 0 {
		t.Fatalf("after a tampered body: %d objects, %d blobs", n, b)
	}
}
