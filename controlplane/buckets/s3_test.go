package buckets

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/blobs/blobstest"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// payloadModes records the x-amz-content-sha256 modes an S3 server saw.
type payloadModes struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (p *payloadModes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := r.Header.Get("X-Amz-Content-Sha256")
		if isHex64(mode) {
			mode = "hex"
		}
		if r.Method == http.MethodPut {
			p.mu.Lock()
			p.seen[mode] = true
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (p *payloadModes) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for m := range p.seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// key issues an access key of prj_a through the REST API.
func (f *fixture) key(body map[string]any) CreatedKey {
	f.t.Helper()
	var ck CreatedKey
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/storage-keys", body).Decode(f.t, &ck)
	return ck
}

// minio returns an unchanged minio-go client of the S3 surface at rawURL
// signing with ck; https URLs trust the test server's certificate (tr).
func minioClient(t *testing.T, rawURL string, ck CreatedKey, tr http.RoundTripper, trailing bool) *minio.Client {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(ck.Key.ID, ck.SecretAccessKey, ""), Secure: u.Scheme == "https",
		Transport: tr, Region: "us-east-1", MaxRetries: 1, TrailingHeaders: trailing})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func s3Code(err error) string { return minio.ToErrorResponse(err).Code }

// TestS3MinioClient: minio-go, unchanged, uses the S3 surface for every
// call it offers: ListBuckets, HeadBucket, PutObject (aws-chunked with
// chunk signatures over plain HTTP), HeadObject, GetObject (whole and a
// range), ListObjectsV2 (delimited and recursive), CopyObject,
// DeleteObject, DeleteObjects, multipart (PutObject in 5 MiB parts, and
// the Core calls: CreateMultipartUpload, UploadPart, ListParts,
// CompleteMultipartUpload, AbortMultipartUpload) and presigned GET and PUT
// URLs, which expire by the server's (fake) clock.
func TestS3MinioClient(t *testing.T) { eachEngine(t, testS3MinioClient) }

func testS3MinioClient(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	f := newFixture(t, e, Config{BytesPerPlan: map[plans.Name]int64{plans.Hobby: 1 << 30}}, time.Now().UTC())
	f.bucket("photos", false)
	f.bucket("archive", false)
	ck := f.key(map[string]any{"name": "app"})
	c := minioClient(t, f.s3.URL, ck, nil, false)

	bs, err := c.ListBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Name != "archive" || bs[1].Name != "photos" {
		t.Fatalf("buckets = %+v", bs)
	}
	if ok, err := c.BucketExists(ctx, "photos"); !ok || err != nil {
		t.Fatalf("exists: %v, %v", ok, err)
	}
	if ok, err := c.BucketExists(ctx, "nope-nope"); ok || err != nil {
		t.Fatalf("missing bucket exists: %v, %v", ok, err)
	}

	data := randomBytes(t, 200_000)
	sum := md5.Sum(data)
	info, err := c.PutObject(ctx, "photos", "2026/cat.jpg", bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "image/jpeg", CacheControl: "max-age=60", UserMetadata: map[string]string{"Camera": "x100"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.ETag != hex.EncodeToString(sum[:]) {
		t.Fatalf("etag = %s", info.ETag)
	}
	st, err := c.StatObject(ctx, "photos", "2026/cat.jpg", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != int64(len(data)) || st.ContentType != "image/jpeg" || st.UserMetadata["Camera"] != "x100" || st.ETag != info.ETag {
		t.Fatalf("stat = %+v", st)
	}
	obj, err := c.GetObject(ctx, "photos", "2026/cat.jpg", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	var ro minio.GetObjectOptions
	ro.SetRange(1000, 1999)
	obj, err = c.GetObject(ctx, "photos", "2026/cat.jpg", ro)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data[1000:2000]) {
		t.Fatalf("range: %d bytes, %v", len(got), err)
	}
	if _, err := c.StatObject(ctx, "photos", "missing", minio.StatObjectOptions{}); s3Code(err) != "NoSuchKey" {
		t.Fatalf("stat of a missing key: %v", err)
	}

	// Listing: a few more keys, delimited and recursive.
	for _, k := range []string{"2026/dog.jpg", "2025/a.jpg", "readme.txt", "a b+c?.txt"} {
		if _, err := c.PutObject(ctx, "photos", k, bytes.NewReader([]byte(k)), int64(len(k)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(opts minio.ListObjectsOptions) []string {
		var out []string
		for o := range c.ListObjects(ctx, "photos", opts) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			out = append(out, o.Key)
		}
		sort.Strings(out) // minio-go gives a page's objects, then its prefixes
		return out
	}
	if got, want := names(minio.ListObjectsOptions{}), []string{"2025/", "2026/", "a b+c?.txt", "readme.txt"}; !slices.Equal(got, want) {
		t.Fatalf("delimited = %q, want %q", got, want)
	}
	if got, want := names(minio.ListObjectsOptions{Prefix: "2026/", Recursive: true, MaxKeys: 1}), []string{"2026/cat.jpg", "2026/dog.jpg"}; !slices.Equal(got, want) {
		t.Fatalf("recursive in pages of one = %q, want %q", got, want)
	}

	// Copy, then delete one and several.
	if _, err := c.CopyObject(ctx, minio.CopyDestOptions{Bucket: "archive", Object: "cat-copy.jpg"},
		minio.CopySrcOptions{Bucket: "photos", Object: "2026/cat.jpg"}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.StatObject(ctx, "archive", "cat-copy.jpg", minio.StatObjectOptions{}); err != nil || st.ETag != info.ETag || st.UserMetadata["Camera"] != "x100" {
		t.Fatalf("copy: %+v, %v", st, err)
	}
	if err := c.RemoveObject(ctx, "photos", "readme.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveObject(ctx, "photos", "readme.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	ch := make(chan minio.ObjectInfo, 2)
	ch <- minio.ObjectInfo{Key: "2025/a.jpg"}
	ch <- minio.ObjectInfo{Key: "never-there"}
	close(ch)
	for e := range c.RemoveObjects(ctx, "photos", ch, minio.RemoveObjectsOptions{}) {
		t.Fatalf("remove objects: %v", e.Err)
	}
	if got, want := names(minio.ListObjectsOptions{Recursive: true}), []string{"2026/cat.jpg", "2026/dog.jpg", "a b+c?.txt"}; !slices.Equal(got, want) {
		t.Fatalf("after deletes = %q, want %q", got, want)
	}

	// Multipart through PutObject: 11 MiB in 5 MiB parts.
	big := randomBytes(t, 11<<20)
	if _, err := c.PutObject(ctx, "photos", "big.bin", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	st, err = c.StatObject(ctx, "photos", "big.bin", minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len(big)) || !bytes.HasSuffix([]byte(st.ETag), []byte("-3")) {
		t.Fatalf("multipart object: %+v, %v", st, err)
	}
	obj, err = c.GetObject(ctx, "photos", "big.bin", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("multipart read: %d bytes, %v", len(got), err)
	}

	// The Core calls one by one, then an aborted upload.
	core := minio.Core{Client: c}
	id, err := core.NewMultipartUpload(ctx, "photos", "core.bin", minio.PutObjectOptions{ContentType: "application/x-test"})
	if err != nil {
		t.Fatal(err)
	}
	p1data, p2data := big[:5<<20], []byte("tail")
	p2, err := core.PutObjectPart(ctx, "photos", "core.bin", id, 2, bytes.NewReader(p2data), int64(len(p2data)), minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := core.PutObjectPart(ctx, "photos", "core.bin", id, 1, bytes.NewReader(p1data), int64(len(p1data)), minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lp, err := core.ListObjectParts(ctx, "photos", "core.bin", id, 0, 1000)
	if err != nil || len(lp.ObjectParts) != 2 || lp.ObjectParts[0].PartNumber != 1 || lp.ObjectParts[1].Size != 4 {
		t.Fatalf("list parts: %+v, %v", lp, err)
	}
	if _, err := core.CompleteMultipartUpload(ctx, "photos", "core.bin", id,
		[]minio.CompletePart{{PartNumber: 1, ETag: p1.ETag}, {PartNumber: 2, ETag: p2.ETag}}, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.StatObject(ctx, "photos", "core.bin", minio.StatObjectOptions{}); err != nil || st.Size != 5<<20+4 || st.ContentType != "application/x-test" {
		t.Fatalf("core object: %+v, %v", st, err)
	}
	id, err = core.NewMultipartUpload(ctx, "photos", "aborted.bin", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.PutObjectPart(ctx, "photos", "aborted.bin", id, 1, bytes.NewReader(p2data), 4, minio.PutObjectPartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := core.AbortMultipartUpload(ctx, "photos", "aborted.bin", id); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ListObjectParts(ctx, "photos", "aborted.bin", id, 0, 1000); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("parts of an aborted upload: %v", err)
	}

	// Presigned URLs: work without credentials until they expire by the
	// server's clock.
	getURL, err := c.PresignedGetObject(ctx, "photos", "2026/cat.jpg", time.Minute, url.Values{"response-content-disposition": {"attachment"}})
	if err != nil {
		t.Fatal(err)
	}
	putURL, err := c.PresignedPutObject(ctx, "photos", "uploaded.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp := httpDo(t, http.MethodGet, getURL.String(), nil)
	if resp.Status != http.StatusOK || !bytes.Equal(resp.Body, data) || resp.Header.Get("Content-Disposition") != "attachment" {
		t.Fatalf("presigned GET: %d, %d bytes, %v", resp.Status, len(resp.Body), resp.Header)
	}
	if resp := httpDo(t, http.MethodPut, putURL.String(), []byte("from a browser")); resp.Status != http.StatusOK {
		t.Fatalf("presigned PUT: %d %s", resp.Status, resp.Body)
	}
	// The URLs were signed with the client's (real) time: move the server's
	// clock just past their minute.
	f.clk.Set(time.Now().UTC().Add(time.Minute + 2*time.Second))
	if resp := httpDo(t, http.MethodGet, getURL.String(), nil); resp.Status != http.StatusForbidden || xmlCode(resp.Body) != "AccessDenied" {
		t.Fatalf("expired presigned GET: %d %s", resp.Status, resp.Body)
	}
	if resp := httpDo(t, http.MethodPut, putURL.String(), []byte("again")); resp.Status != http.StatusForbidden {
		t.Fatalf("expired presigned PUT: %d %s", resp.Status, resp.Body)
	}
	f.clk.Set(time.Now().UTC())

	// The key's last use shows, to the minute.
	var kl KeyList
	f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/storage-keys", nil).Decode(t, &kl)
	if len(kl.Keys) != 1 || kl.Keys[0].ID != ck.Key.ID || kl.Keys[0].LastUsedAt == nil {
		t.Fatalf("keys after use = %+v", kl.Keys)
	}

	// What the REST API sees matches.
	var a BucketAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+bucketID(t, f, "photos"), nil).Decode(t, &a)
	want := int64(len(data)) + int64(len("2026/dog.jpg")+len("a b+c?.txt")) + int64(len(big)) + 5<<20 + 4 + int64(len("from a browser"))
	if a.Bucket.Objects != 6 || a.Bucket.Bytes != want || a.Bucket.UploadBytes != 0 {
		t.Fatalf("bucket = %+v, want 6 objects, %d bytes", a.Bucket, want)
	}
}

// bucketID finds a bucket of prj_a by name.
func bucketID(t *testing.T, f *fixture, name string) string {
	t.Helper()
	b, err := bucketByName(context.Background(), f.db, "prj_a", name)
	if err != nil {
		t.Fatal(err)
	}
	return b.ID
}

// httpDo sends a request without credentials.
func httpDo(t *testing.T, method, rawURL string, body []byte) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// xmlCode is the Code of an S3 error document.
func xmlCode(body []byte) string {
	var e s3Error
	xml.Unmarshal(body, &e)
	return e.Code
}

// TestS3PayloadModes: every way an S3 client sends a body is accepted and
// checked: aws-chunked with chunk signatures, with and without a signed
// trailer checksum (plain HTTP); unsigned, with an unsigned trailer
// checksum, and with the body's SHA-256 in the header (HTTPS), for single
// objects and parts.
func TestS3PayloadModes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgtest.Engines()[0], Config{}, time.Now().UTC())
	f.bucket("modes", false)
	ck := f.key(map[string]any{"name": "app"})
	modes := &payloadModes{seen: map[string]bool{}}
	plain := httptest.NewServer(modes.wrap(f.svc.S3Handler("")))
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(modes.wrap(f.svc.S3Handler("")))
	t.Cleanup(tlsSrv.Close)
	tr := tlsSrv.Client().Transport

	data := randomBytes(t, 150_000)
	part := randomBytes(t, 5<<20)
	check := func(c *minio.Client, key string, want []byte) {
		t.Helper()
		obj, err := c.GetObject(ctx, "modes", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Close()
		got, err := io.ReadAll(obj)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes, %v", key, len(got), err)
		}
	}
	for _, c := range []struct {
		name     string
		url      string
		tr       http.RoundTripper
		trailing bool
		opts     minio.PutObjectOptions
	}{
		{"http signed chunks", plain.URL, nil, false, minio.PutObjectOptions{}},
		{"http signed chunks with signed trailer", plain.URL, nil, true, minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}},
		{"http unsigned trailer", plain.URL, nil, true, minio.PutObjectOptions{DisableContentSha256: true}},
		{"https unsigned", tlsSrv.URL, tr, false, minio.PutObjectOptions{}},
		{"https unsigned trailer", tlsSrv.URL, tr, true, minio.PutObjectOptions{}},
		{"https sha256 checksum trailer", tlsSrv.URL, tr, true, minio.PutObjectOptions{Checksum: minio.ChecksumSHA256}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := minioClient(t, c.url, ck, c.tr, c.trailing)
			if _, err := cl.PutObject(ctx, "modes", c.name, bytes.NewReader(data), int64(len(data)), c.opts); err != nil {
				t.Fatal(err)
			}
			check(cl, c.name, data)
			o := c.opts
			o.PartSize = 5 << 20
			whole := append(slices.Clone(part), data...)
			if _, err := cl.PutObject(ctx, "modes", c.name+" multipart", bytes.NewReader(whole), int64(len(whole)), o); err != nil {
				t.Fatal(err)
			}
			check(cl, c.name+" multipart", whole)
		})
	}
	// The body's SHA-256 in the header (HTTPS: no streaming).
	core := minio.Core{Client: minioClient(t, tlsSrv.URL, ck, tr, false)}
	h := sha256.Sum256(data)
	if _, err := core.PutObject(ctx, "modes", "hex", bytes.NewReader(data), int64(len(data)), "", hex.EncodeToString(h[:]), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	wrong := sha256.Sum256([]byte("other"))
	if _, err := core.PutObject(ctx, "modes", "hex-wrong", bytes.NewReader(data), int64(len(data)), "", hex.EncodeToString(wrong[:]), minio.PutObjectOptions{}); s3Code(err) != "XAmzContentSHA256Mismatch" {
		t.Fatalf("wrong sha256: %v", err)
	}
	want := []string{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "UNSIGNED-PAYLOAD", "hex"}
	if got := modes.list(); !slices.Equal(got, want) {
		t.Fatalf("payload modes seen = %q, want %q", got, want)
	}
	if _, err := getObject(ctx, f.db, bucketID(t, f, "modes"), "hex-wrong"); !isNotFound(err) {
		t.Fatalf("a refused body was stored: %v", err)
	}
}

// TestS3OnS3Blobs: with the blob store on an S3-compatible server (a real
// one: versitygw), objects and multipart objects go through the same
// calls and read back the same, ranges across parts included, and the
// blob cleanup keeps them while named and frees them after the project
// goes: the area scales out as deployed files do.
func TestS3OnS3Blobs(t *testing.T) {
	ctx := context.Background()
	backend := blobstest.StartS3(t).Backend(t, "platform/")
	f := newFixtureOn(t, pgtest.OpenSQLite(t), backend, Config{BytesPerPlan: map[plans.Name]int64{plans.Hobby: 1 << 30}}, time.Now().UTC())
	f.bucket("media", false)
	c := minioClient(t, f.s3.URL, f.key(map[string]any{"name": "k"}), nil, false)
	small := randomBytes(t, 70_000)
	big := randomBytes(t, 11<<20)
	if _, err := c.PutObject(ctx, "media", "small", bytes.NewReader(small), int64(len(small)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, "media", "big", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	var ro minio.GetObjectOptions
	ro.SetRange(5<<20-10, 5<<20+9) // across the first two parts
	for _, c2 := range []struct {
		key  string
		opts minio.GetObjectOptions
		want []byte
	}{{"small", minio.GetObjectOptions{}, small}, {"big", minio.GetObjectOptions{}, big}, {"big", ro, big[5<<20-10 : 5<<20+10]}} {
		obj, err := c.GetObject(ctx, "media", c2.key, c2.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, c2.want) {
			t.Fatalf("%s: %d bytes, %v", c2.key, len(got), err)
		}
	}
	st, err := blobs.Collect(ctx, backend, []blobs.RefSource{f.svc}, time.Now().Add(48*time.Hour), time.Hour)
	if err != nil || st.Deleted != 0 || st.Referenced != 4 {
		t.Fatalf("cleanup while named: %+v, %v", st, err)
	}
	if err := f.svc.Remove(ctx, "prj_a"); err != nil {
		t.Fatal(err)
	}
	st, err = blobs.Collect(ctx, backend, []blobs.RefSource{f.svc}, time.Now().Add(48*time.Hour), time.Hour)
	if err != nil || st.Deleted != 4 || f.blobCount() != 0 {
		t.Fatalf("cleanup after the teardown: %+v, %v, %d left", st, err, f.blobCount())
	}
}
