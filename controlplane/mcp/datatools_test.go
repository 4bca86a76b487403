package mcp

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// FuzzPutObject: put_object's arguments build a PUT of the bytes to one
// object of the named bucket, the key one escaped segment (never another
// route, a query or a fragment), or a refusal before anything is sent.
func FuzzPutObject(f *testing.F) {
	f.Add("bkt_1", "a/b c.txt", "hello", false)
	f.Add("bkt_1", "../../keys", base64.StdEncoding.EncodeToString([]byte{0, 1}), true)
	f.Add("b/../x", "k?x=1#f", "!!", true)
	f.Fuzz(func(t *testing.T, bucket, key, content string, b64 bool) {
		rq, err := buildPutObject(putObjectIn{BucketID: bucket, Key: key, Content: content, Base64: b64})
		if err != nil {
			if _, ok := err.(*Refusal); !ok {
				t.Fatalf("error %v is not a refusal", err)
			}
			return
		}
		prefix := "/api/buckets/" + url.PathEscape(strings.TrimSpace(bucket)) + "/objects/"
		rest, ok := strings.CutPrefix(rq.Path, prefix)
		if !ok || strings.ContainsAny(rest, "/?#") || rq.Method != "PUT" || rq.Raw == nil || len(rq.Raw) > MaxObjectPutBytes {
			t.Fatalf("%q %q builds %s %q (%d bytes)", bucket, key, rq.Method, rq.Path, len(rq.Raw))
		}
		if back, err := url.PathUnescape(rest); err != nil || back != key {
			t.Fatalf("key %q reaches the API as %q", key, back)
		}
	})
}
