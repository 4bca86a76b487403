package buckets

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// partPath is the REST path of part n of an upload.
func partPath(bucketID, uploadID string, n int) string {
	return "/api/buckets/" + bucketID + "/uploads/" + uploadID + "/parts/" + strconv.Itoa(n)
}

// TestMultipartREST: a large object goes up in parts (sent out of order,
// one sent twice), the upload says which parts it holds (to resume), and
// completing it makes one object whose bytes are the parts in order, with
// S3's multipart ETag, read whole and in ranges across parts. The parts'
// bytes count against the bucket as upload bytes until then.
func TestMultipartREST(t *testing.T) { eachEngine(t, testMultipartREST) }

func testMultipartREST(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{MinPartBytes: 10}, t0)
	b := f.bucket("big", false)
	var ua UploadAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads",
		map[string]any{"key": "video.bin", "contentType": "video/mp4", "metadata": map[string]string{"Take": "2"}}).Decode(t, &ua)
	up := ua.Upload
	if up.Key != "video.bin" || !up.ExpiresAt.Equal(t0.Add(DefaultUploadTTL)) || up.Metadata["take"] != "2" {
		t.Fatalf("upload = %+v", up)
	}
	parts := [][]byte{bytes.Repeat([]byte("1"), 12), bytes.Repeat([]byte("2"), 10), []byte("end")}
	var pa PartAnswer
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up.ID, 3), parts[2]).Decode(t, &pa)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up.ID, 1), []byte("first try")).Decode(t, &pa)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up.ID, 1), parts[0]).Decode(t, &pa)
	if pa.Part.PartNumber != 1 || pa.Part.Size != 12 || pa.Part.ETag != fmt.Sprintf("%x", md5.Sum(parts[0])) {
		t.Fatalf("part = %+v", pa.Part)
	}
	// Resume: the upload lists what it has; part 2 is missing.
	f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+b.ID+"/uploads/"+up.ID, nil).Decode(t, &ua)
	if len(ua.Upload.Parts) != 2 || ua.Upload.Parts[0].PartNumber != 1 || ua.Upload.Parts[1].PartNumber != 3 {
		t.Fatalf("parts so far = %+v", ua.Upload.Parts)
	}
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up.ID, 2), parts[1])
	if got := f.readBucket(b.ID); got.UploadBytes != 25 || got.Bytes != 0 || got.Objects != 0 {
		t.Fatalf("before completing: %+v", got)
	}
	var named []CompletePart
	var md5s [][]byte
	for i, p := range parts {
		m := md5.Sum(p)
		md5s = append(md5s, m[:])
		named = append(named, CompletePart{PartNumber: i + 1, ETag: fmt.Sprintf(`"%x"`, m)})
	}
	var oa ObjectAnswer
	f.must(http.StatusOK, "dev", "POST", "/api/buckets/"+b.ID+"/uploads/"+up.ID+"/complete", map[string]any{"parts": named}).Decode(t, &oa)
	if oa.Object.Size != 25 || oa.Object.Parts != 3 || oa.Object.ETag != multipartETag(md5s) || oa.Object.ContentType != "video/mp4" {
		t.Fatalf("object = %+v", oa.Object)
	}
	whole := bytes.Join(parts, nil)
	r := f.must(http.StatusOK, "dev", "GET", "/api/buckets/"+b.ID+"/objects/video.bin", nil)
	if !bytes.Equal(r.Body, whole) || r.Header.Get("Etag") != `"`+multipartETag(md5s)+`"` {
		t.Fatalf("read %q etag %s", r.Body, r.Header.Get("Etag"))
	}
	for _, rg := range [][2]int{{0, 0}, {10, 14}, {11, 23}, {21, 24}, {5, 24}} {
		r := f.must(http.StatusPartialContent, "dev", "GET", "/api/buckets/"+b.ID+"/objects/video.bin", nil, "Range", fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))
		if !bytes.Equal(r.Body, whole[rg[0]:rg[1]+1]) {
			t.Fatalf("range %v = %q, want %q", rg, r.Body, whole[rg[0]:rg[1]+1])
		}
	}
	if got := f.readBucket(b.ID); got.UploadBytes != 0 || got.Bytes != 25 || got.Objects != 1 {
		t.Fatalf("after completing: %+v", got)
	}
	if n := f.count("storage_uploads") + f.count("storage_upload_parts"); n != 0 {
		t.Fatalf("upload rows left: %d", n)
	}
	// The upload is gone once completed.
	f.must(http.StatusNotFound, "dev", "POST", "/api/buckets/"+b.ID+"/uploads/"+up.ID+"/complete", map[string]any{"parts": named})
}

// TestMultipartRefusals: wrong part numbers, parts out of order, unknown
// or changed parts, parts too small, a part over the plan's bytes and an
// unknown upload are refused with codes saying what to fix; a refused
// completion leaves the upload as it was.
func TestMultipartRefusals(t *testing.T) { eachEngine(t, testMultipartRefusals) }

func testMultipartRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{MinPartBytes: 10, MaxPartBytes: 100, BytesPerPlan: map[plans.Name]int64{plans.Hobby: 110}}, t0)
	b := f.bucket("big", false)
	var ua UploadAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "k"}).Decode(t, &ua)
	up := ua.Upload.ID
	p1, p2 := bytes.Repeat([]byte("a"), 10), []byte("short")
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up, 1), p2) // part 1 too small to be anything but last
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up, 2), p1)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, up, 3), p2)
	etag := func(p []byte) string { return fmt.Sprintf("%x", md5.Sum(p)) }
	complete := "/api/buckets/" + b.ID + "/uploads/" + up + "/complete"
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"part number 0", "dev", "PUT", partPath(b.ID, up, 0), "x", 400, "invalid_request"},
		{"part number 10001", "dev", "PUT", partPath(b.ID, up, MaxParts+1), "x", 400, "invalid_request"},
		{"part number not a number", "dev", "PUT", "/api/buckets/" + b.ID + "/uploads/" + up + "/parts/one", "x", 400, "invalid_request"},
		{"part too large", "dev", "PUT", partPath(b.ID, up, 4), string(bytes.Repeat([]byte("x"), 101)), 413, "part_too_large"},
		{"part over the plan's bytes", "dev", "PUT", partPath(b.ID, up, 4), string(bytes.Repeat([]byte("x"), 100)), 402, "plan_limit"},
		{"unknown upload", "dev", "PUT", partPath(b.ID, "upl_nope", 1), "x", 404, "upload_not_found"},
		{"no parts", "dev", "POST", complete, map[string]any{"parts": []any{}}, 400, "invalid_request"},
		{"out of order", "dev", "POST", complete, map[string]any{"parts": []CompletePart{{2, etag(p1)}, {3, etag(p2)}, {2, etag(p1)}}}, 400, "invalid_part_order"},
		{"part not sent", "dev", "POST", complete, map[string]any{"parts": []CompletePart{{2, etag(p1)}, {4, etag(p2)}}}, 400, "invalid_part"},
		{"wrong etag", "dev", "POST", complete, map[string]any{"parts": []CompletePart{{2, etag(p2)}}}, 400, "invalid_part"},
		{"small part not last", "dev", "POST", complete, map[string]any{"parts": []CompletePart{{1, etag(p2)}, {2, etag(p1)}}}, 400, "part_too_small"},
		{"viewer sends a part", "viewer", "PUT", partPath(b.ID, up, 1), "x", 403, "insufficient_role"},
		{"another workspace", "stranger", "GET", "/api/buckets/" + b.ID + "/uploads/" + up, nil, 404, "not_found"},
		{"bad key", "dev", "POST", "/api/buckets/" + b.ID + "/uploads", map[string]any{"key": ""}, 400, "invalid_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, c.method, c.path, c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+b.ID+"/uploads/"+up, nil).Decode(t, &ua)
	if len(ua.Upload.Parts) != 3 || f.count("storage_objects") != 0 {
		t.Fatalf("after refusals: %d parts, %d objects", len(ua.Upload.Parts), f.count("storage_objects"))
	}
	// Parts 2 and 3 make the object; part 1, not named, is dropped.
	var oa ObjectAnswer
	f.must(http.StatusOK, "dev", "POST", complete, map[string]any{"parts": []CompletePart{{2, etag(p1)}, {3, etag(p2)}}}).Decode(t, &oa)
	if got := f.readBucket(b.ID); oa.Object.Size != 15 || got.Bytes != 15 || got.UploadBytes != 0 {
		t.Fatalf("object %+v, bucket %+v", oa.Object, got)
	}
}

// TestUploadExpiry: an upload expires after Config.UploadTTL (fake
// clock): its parts are refused at once, and the sweep removes it and
// takes its bytes off the bucket; an abort does the same at any time.
func TestUploadExpiry(t *testing.T) { eachEngine(t, testUploadExpiry) }

func testUploadExpiry(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{UploadTTL: time.Hour}, t0)
	b := f.bucket("big", false)
	var old, aborted UploadAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "a"}).Decode(t, &old)
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "b"}).Decode(t, &aborted)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, old.Upload.ID, 1), "12345")
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, aborted.Upload.ID, 1), "678")
	f.must(http.StatusOK, "dev", "DELETE", "/api/buckets/"+b.ID+"/uploads/"+aborted.Upload.ID, nil)
	f.must(http.StatusNotFound, "dev", "DELETE", "/api/buckets/"+b.ID+"/uploads/"+aborted.Upload.ID, nil)
	if got := f.readBucket(b.ID); got.UploadBytes != 5 {
		t.Fatalf("after the abort: %d upload bytes", got.UploadBytes)
	}
	f.clk.Advance(59 * time.Minute)
	if n, err := f.svc.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v", n, err)
	}
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, old.Upload.ID, 2), "x")
	f.clk.Advance(time.Minute)
	if r := f.call("dev", "PUT", partPath(b.ID, old.Upload.ID, 3), "x"); r.Status != 404 || r.Code() != "upload_not_found" {
		t.Fatalf("part after expiry: %d %s", r.Status, r.Body)
	}
	if n, err := f.svc.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep after expiry: %d, %v", n, err)
	}
	if got := f.readBucket(b.ID); got.UploadBytes != 0 || f.count("storage_uploads")+f.count("storage_upload_parts") != 0 {
		t.Fatalf("after the sweep: %+v, %d upload rows", got, f.count("storage_uploads")+f.count("storage_upload_parts"))
	}
}
