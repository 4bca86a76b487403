package memory

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// keyPath is the path of key in store id, percent-encoded as a client
// would (encodeURIComponent).
func keyPath(id, key string) string {
	return "/api/memory/" + id + "/keys/" + url.PathEscape(key)
}

// TestKeyRoundTrip: values of every kind are put raw and got back byte
// for byte with their metadata and expiry in headers, keys of every kind
// reach the store as written, overwrites replace, and deletes are
// idempotent; the store's counts follow every change.
func TestKeyRoundTrip(t *testing.T) { eachEngine(t, testKeyRoundTrip) }

func testKeyRoundTrip(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create("kv")
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}
	for _, c := range []struct {
		name, key string
		path      string // as sent; keyPath(key) when empty
		value     []byte
		metadata  string // X-Memory-Metadata sent
		wantMeta  string // and answered
	}{
		{name: "text", key: "greeting", value: []byte("hello")},
		{name: "empty value", key: "empty", value: []byte{}},
		{name: "binary value", key: "bin", value: binary},
		{name: "a value of 1 MiB", key: "big", value: bytes.Repeat([]byte{'v'}, MaxValueBytes)},
		{name: "slashes kept", key: "user/42/session", value: []byte("s")},
		{name: "slashes sent unescaped", key: "a/b/c", path: "/api/memory/" + st.ID + "/keys/a/b/c", value: []byte("abc")},
		{name: "escaped slashes and dots", key: "a//b/../c", value: []byte("dots")},
		{name: "spaces, query and fragment characters", key: "what? #1 & more%", value: []byte("q")},
		{name: "unicode", key: "ключ/日本/🔑", value: []byte("u")},
		{name: "key of 512 bytes", key: strings.Repeat("k", MaxKeyBytes), value: []byte("long")},
		{name: "metadata", key: "meta", value: []byte("m"), metadata: `{ "owner": "ada", "n": [1, 2] }`, wantMeta: `{"owner":"ada","n":[1,2]}`},
		{name: "metadata outside ASCII", key: "meta2", value: []byte("m"), metadata: `{"name":"Zoë 🔑"}`, wantMeta: `{"name":"Zo\u00eb \ud83d\udd11"}`},
		{name: "metadata null is none", key: "meta3", value: []byte("m"), metadata: `null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				path = keyPath(st.ID, c.key)
			}
			var hdr []string
			if c.metadata != "" {
				hdr = []string{HeaderMetadata, c.metadata}
			}
			var w PutAnswer
			f.must(http.StatusOK, "dev", "PUT", path, c.value, hdr...).Decode(t, &w)
			if w.Key != c.key || w.Bytes != len(c.value) || w.ExpiresAt != nil {
				t.Fatalf("put answered %+v", w)
			}
			r := f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, c.key), nil)
			if !bytes.Equal(r.Body, c.value) {
				t.Fatalf("got %d bytes %q, want %d", len(r.Body), r.Body[:min(len(r.Body), 20)], len(c.value))
			}
			if got := r.Header.Get(HeaderMetadata); got != c.wantMeta {
				t.Fatalf("metadata header %q, want %q", got, c.wantMeta)
			}
			if c.wantMeta != "" {
				var a, b any
				json.Unmarshal([]byte(c.metadata), &a)
				json.Unmarshal([]byte(r.Header.Get(HeaderMetadata)), &b)
				if ja, _ := json.Marshal(a); string(ja) != mustJSON(t, b) {
					t.Fatalf("metadata header %s reads back as %s", r.Header.Get(HeaderMetadata), mustJSON(t, b))
				}
			}
			if r.Header.Get(HeaderExpiresAt) != "" {
				t.Fatalf("expiry header on a key without one: %q", r.Header.Get(HeaderExpiresAt))
			}
			f.consistent(st.ID)
		})
	}
	// Overwrite: the value, metadata and size are replaced.
	before := f.store(st.ID)
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "greeting"), "hello, world")
	if r := f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "greeting"), nil); string(r.Body) != "hello, world" {
		t.Fatalf("after overwrite: %q", r.Body)
	}
	if after := f.store(st.ID); after.Keys != before.Keys || after.Bytes != before.Bytes+7 {
		t.Fatalf("overwrite counted %+v -> %+v", before, after)
	}
	// Delete is idempotent; a deleted key is gone.
	var d DeleteAnswer
	f.must(http.StatusOK, "dev", "DELETE", keyPath(st.ID, "user/42/session"), nil).Decode(t, &d)
	if !d.Deleted || d.Key != "user/42/session" {
		t.Fatalf("delete = %+v", d)
	}
	f.must(http.StatusOK, "dev", "DELETE", keyPath(st.ID, "user/42/session"), nil).Decode(t, &d)
	if d.Deleted {
		t.Fatal("second delete says it deleted")
	}
	if r := f.must(http.StatusNotFound, "viewer", "GET", keyPath(st.ID, "user/42/session"), nil); r.Code() != "key_not_found" {
		t.Fatalf("deleted key: %s", r.Body)
	}
	f.consistent(st.ID)
}

// TestValueNeverRendered: a stored HTML or SVG value is answered as bytes a
// browser neither renders nor sniffs, whatever the key's name: the API's
// origin also serves the dashboard, whose session cookie a navigation to
// the value's URL would carry.
func TestValueNeverRendered(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	st := f.create("kv")
	for _, c := range []struct{ key, value string }{
		{"page.html", `<script>alert(document.cookie)</script>`},
		{"image.svg", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`},
	} {
		t.Run(c.key, func(t *testing.T) {
			f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, c.key), c.value)
			r := f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, c.key), nil)
			for h, want := range map[string]string{"Content-Type": "application/octet-stream", "X-Content-Type-Options": "nosniff",
				"Content-Security-Policy": "default-src 'none'; sandbox", "Cache-Control": "no-store"} {
				if got := r.Header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBulk: a bulk put writes text and base64 values with metadata and
// time to live, all or none; a bulk get answers each key or null, text
// as text and bytes as base64; a bulk delete counts what was there.
func TestBulk(t *testing.T) { eachEngine(t, testBulk) }

func testBulk(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create("kv")
	bin := []byte{0xff, 0, 0xfe}
	var put BulkPutAnswer
	f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": []map[string]any{
		{"key": "a", "value": "alpha"},
		{"key": "b", "value": base64.StdEncoding.EncodeToString(bin), "base64": true, "metadata": map[string]any{"k": "v"}},
		{"key": "c", "value": "", "ttlSeconds": 60},
	}}).Decode(t, &put)
	if len(put.Written) != 3 || put.Written[1].Bytes != 3 || put.Written[2].ExpiresAt == nil || !put.Written[2].ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("bulk put = %+v", put)
	}
	if r := f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "b"), nil); !bytes.Equal(r.Body, bin) || r.Header.Get(HeaderMetadata) != `{"k":"v"}` {
		t.Fatalf("b = %q %v", r.Body, r.Header)
	}
	var got BulkGetAnswer
	f.must(http.StatusOK, "readonly", "POST", "/api/memory/"+st.ID+"/bulk/get", map[string]any{"keys": []string{"a", "b", "c", "missing", "a"}}).Decode(t, &got)
	if len(got.Values) != 4 || got.Values["missing"] != nil {
		t.Fatalf("bulk get = %+v", got)
	}
	if v := got.Values["a"]; v == nil || v.Value != "alpha" || v.Base64 || string(v.Metadata) != "null" || v.ExpiresAt != nil {
		t.Fatalf("a = %+v", v)
	}
	if v := got.Values["b"]; v == nil || !v.Base64 || v.Value != base64.StdEncoding.EncodeToString(bin) || string(v.Metadata) != `{"k":"v"}` {
		t.Fatalf("b = %+v", v)
	}
	if v := got.Values["c"]; v == nil || v.Value != "" || v.ExpiresAt == nil {
		t.Fatalf("c = %+v", v)
	}
	// All or none: one bad entry writes nothing.
	r := f.must(http.StatusBadRequest, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": []map[string]any{
		{"key": "d", "value": "delta"}, {"key": strings.Repeat("k", MaxKeyBytes+1), "value": "x"}}})
	if r.Code() != "key_too_long" || r.Field("index") != float64(1) {
		t.Fatalf("bad entry: %s", r.Body)
	}
	f.must(http.StatusNotFound, "viewer", "GET", keyPath(st.ID, "d"), nil)
	// A bulk get answers at most MaxBulkGetBytes of values: nine values of
	// 1 MiB are refused with what to do, and counted as nothing.
	var big []map[string]any
	var names []string
	for i := range MaxBulkGetBytes/MaxValueBytes + 1 {
		big = append(big, map[string]any{"key": fmt.Sprint("big", i), "value": strings.Repeat("v", MaxValueBytes)})
		names = append(names, fmt.Sprint("big", i))
	}
	for i := 0; i < len(big); i += 3 {
		f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": big[i:min(i+3, len(big))]})
	}
	ops := f.operations()
	if r := f.must(http.StatusBadRequest, "viewer", "POST", "/api/memory/"+st.ID+"/bulk/get", map[string]any{"keys": names}); r.Code() != "result_too_large" {
		t.Fatalf("nine values of 1 MiB: %s", r.Body)
	}
	if got := f.operations(); got != ops {
		t.Fatalf("a refused bulk get counted %v operations", got-ops)
	}
	f.must(http.StatusOK, "viewer", "POST", "/api/memory/"+st.ID+"/bulk/get", map[string]any{"keys": names[:MaxBulkGetBytes/MaxValueBytes]})
	f.must(http.StatusOK, "dev", "POST", "/api/memory/"+st.ID+"/bulk/delete", map[string]any{"keys": names})
	var del BulkDeleteAnswer
	f.must(http.StatusOK, "dev", "POST", "/api/memory/"+st.ID+"/bulk/delete", map[string]any{"keys": []string{"a", "b", "missing"}}).Decode(t, &del)
	if del.Deleted != 2 {
		t.Fatalf("bulk delete = %+v", del)
	}
	if s := f.store(st.ID); s.Keys != 1 {
		t.Fatalf("after bulk delete %+v", s)
	}
	f.consistent(st.ID)
}

// TestKeyRefusals: every refused key call answers the code that says what
// to fix, and nothing is written or metered.
func TestKeyRefusals(t *testing.T) { eachEngine(t, testKeyRefusals) }

func testKeyRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create("kv")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "kept"), "v")
	gone := f.create("gone")
	f.must(http.StatusOK, "dev", "DELETE", "/api/memory/"+gone.ID, nil)
	ops := f.operations()
	base := "/api/memory/" + st.ID
	many := make([]string, MaxBulkKeys+1)
	for i := range many {
		many[i] = "k" + string(rune('a'+i%26)) + strings.Repeat("x", i)
	}
	entries := func(es ...map[string]any) map[string]any { return map[string]any{"entries": es} }
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		header                  []string
		status                  int
		code                    string
	}{
		{"key too long", "dev", "PUT", keyPath(st.ID, strings.Repeat("k", MaxKeyBytes+1)), "v", nil, 400, "key_too_long"},
		{"key not UTF-8", "dev", "PUT", base + "/keys/a%FFb", "v", nil, 400, "invalid_key"},
		{"key with NUL", "dev", "PUT", base + "/keys/a%00b", "v", nil, 400, "invalid_key"},
		{"key with a line break", "dev", "PUT", base + "/keys/a%0Ab", "v", nil, 400, "invalid_key"},
		{"key with DEL", "dev", "PUT", base + "/keys/a%7Fb", "v", nil, 400, "invalid_key"},
		{"key .", "dev", "PUT", base + "/keys/%2E", "v", nil, 400, "invalid_key"},
		{"key ..", "dev", "PUT", base + "/keys/%2E%2E", "v", nil, 400, "invalid_key"},
		{"empty key", "dev", "PUT", base + "/keys/", "v", nil, 400, "invalid_key"},
		{"empty key read", "viewer", "GET", base + "/keys/", nil, nil, 400, "invalid_key"},
		{"value over 1 MiB", "dev", "PUT", keyPath(st.ID, "big"), bytes.Repeat([]byte{'v'}, MaxValueBytes+1), nil, 413, "value_too_large"},
		{"metadata not JSON", "dev", "PUT", keyPath(st.ID, "m"), "v", []string{HeaderMetadata, "{owner: ada}"}, 400, "invalid_metadata"},
		{"metadata too large", "dev", "PUT", keyPath(st.ID, "m"), "v", []string{HeaderMetadata, `"` + strings.Repeat("m", MaxMetadataBytes) + `"`}, 400, "metadata_too_large"},
		{"ttl zero", "dev", "PUT", keyPath(st.ID, "t") + "?ttlSeconds=0", "v", nil, 400, "invalid_ttl"},
		{"ttl negative", "dev", "PUT", keyPath(st.ID, "t") + "?ttlSeconds=-5", "v", nil, 400, "invalid_ttl"},
		{"ttl not a number", "dev", "PUT", keyPath(st.ID, "t") + "?ttlSeconds=1h", "v", nil, 400, "invalid_ttl"},
		{"ttl past ten years", "dev", "PUT", keyPath(st.ID, "t") + "?ttlSeconds=315360001", "v", nil, 400, "invalid_ttl"},
		{"misspelt ttl parameter", "dev", "PUT", keyPath(st.ID, "t") + "?ttl=60", "v", nil, 400, "unknown_parameter"},
		{"unknown list parameter", "viewer", "GET", base + "/keys?prefx=a", nil, nil, 400, "unknown_parameter"},
		{"list limit 0", "viewer", "GET", base + "/keys?limit=0", nil, nil, 400, "invalid_request"},
		{"list limit past 1000", "viewer", "GET", base + "/keys?limit=1001", nil, nil, 400, "invalid_request"},
		{"list cursor not base64", "viewer", "GET", base + "/keys?cursor=***", nil, nil, 400, "invalid_cursor"},
		{"list cursor of no key", "viewer", "GET", base + "/keys?cursor=", nil, nil, 200, ""},
		{"list prefix too long", "viewer", "GET", base + "/keys?prefix=" + strings.Repeat("p", MaxKeyBytes+1), nil, nil, 400, "key_too_long"},
		{"list prefix with a control character", "viewer", "GET", base + "/keys?prefix=%01", nil, nil, 400, "invalid_key"},
		{"bulk put of no entries", "dev", "PUT", base + "/bulk", entries(), nil, 400, "too_many_keys"},
		{"bulk put of 101 entries", "dev", "PUT", base + "/bulk", map[string]any{"entries": func() []map[string]any {
			out := make([]map[string]any, MaxBulkKeys+1)
			for i := range out {
				out[i] = map[string]any{"key": many[i], "value": "v"}
			}
			return out
		}()}, nil, 400, "too_many_keys"},
		{"bulk put of a key twice", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "1"}, map[string]any{"key": "a", "value": "2"}), nil, 400, "duplicate_key"},
		{"bulk put of bad base64", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "!!", "base64": true}), nil, 400, "invalid_value"},
		{"bulk put of a value over 1 MiB", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": strings.Repeat("v", MaxValueBytes+1)}), nil, 413, "value_too_large"},
		{"bulk put of bad ttl", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "v", "ttlSeconds": -1}), nil, 400, "invalid_ttl"},
		{"bulk put of large metadata", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "v", "metadata": strings.Repeat("m", MaxMetadataBytes)}), nil, 400, "metadata_too_large"},
		{"bulk put of an unknown field", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "v", "expiration": 5}), nil, 400, "unknown_field"},
		{"bulk put of a bad key", "dev", "PUT", base + "/bulk", entries(map[string]any{"key": "", "value": "v"}), nil, 400, "invalid_key"},
		{"bulk get of no keys", "viewer", "POST", base + "/bulk/get", map[string]any{"keys": []string{}}, nil, 400, "too_many_keys"},
		{"bulk get of 101 keys", "viewer", "POST", base + "/bulk/get", map[string]any{"keys": many}, nil, 400, "too_many_keys"},
		{"bulk get of a bad key", "viewer", "POST", base + "/bulk/get", map[string]any{"keys": []string{"ok", "a\x00"}}, nil, 400, "invalid_key"},
		{"bulk delete of 101 keys", "dev", "POST", base + "/bulk/delete", map[string]any{"keys": many}, nil, 400, "too_many_keys"},
		{"get an unknown key", "viewer", "GET", keyPath(st.ID, "nothing"), nil, nil, 404, "key_not_found"},
		{"unknown store", "dev", "PUT", keyPath("mem_zzz", "k"), "v", nil, 404, "not_found"},
		{"deleted store", "dev", "PUT", keyPath(gone.ID, "k"), "v", nil, 404, "not_found"},
		{"deleted store read", "viewer", "GET", keyPath(gone.ID, "k"), nil, nil, 404, "not_found"},
		{"another workspace's store", "stranger", "GET", keyPath(st.ID, "kept"), nil, nil, 404, "not_found"},
		{"another workspace writes", "stranger", "PUT", keyPath(st.ID, "k"), "v", nil, 404, "not_found"},
		{"viewer writes", "viewer", "PUT", keyPath(st.ID, "k"), "v", nil, 403, "insufficient_role"},
		{"viewer deletes", "viewer", "DELETE", keyPath(st.ID, "kept"), nil, nil, 403, "insufficient_role"},
		{"viewer bulk puts", "viewer", "PUT", base + "/bulk", entries(map[string]any{"key": "a", "value": "v"}), nil, 403, "insufficient_role"},
		{"viewer bulk deletes", "viewer", "POST", base + "/bulk/delete", map[string]any{"keys": []string{"kept"}}, nil, 403, "insufficient_role"},
		{"read-only key writes", "readonly", "PUT", keyPath(st.ID, "k"), "v", nil, 403, "read_only_key"},
		{"read-only key deletes", "readonly", "DELETE", keyPath(st.ID, "kept"), nil, nil, 403, "read_only_key"},
		{"key of another project reads", "otherprj", "GET", keyPath(st.ID, "kept"), nil, nil, 403, "project_key_mismatch"},
		{"key of another project writes", "otherprj", "PUT", keyPath(st.ID, "k"), "v", nil, 403, "project_key_mismatch"},
		{"key of another project lists", "otherprj", "GET", base + "/keys", nil, nil, 403, "project_key_mismatch"},
		{"key of another project bulk gets", "otherprj", "POST", base + "/bulk/get", map[string]any{"keys": []string{"kept"}}, nil, 403, "project_key_mismatch"},
		{"no credentials", "", "GET", keyPath(st.ID, "kept"), nil, nil, 401, "unauthenticated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, c.method, c.path, c.body, c.header...)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n := f.count("memory_keys"); n != 1 {
		t.Fatalf("%d keys after refusals, want the 1 kept", n)
	}
	f.consistent(st.ID)
	// Refusals are not operations; the reads of a missing key and the
	// empty-cursor listing are.
	if got := f.operations(); got != ops+2 {
		t.Fatalf("memory_operations %v after refusals, want %v", got, ops+2)
	}
}

// TestKeyPermissions: developers, owners and keys of the project write;
// viewers and read-only keys read; keys of another project and other
// workspaces do neither.
func TestKeyPermissions(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{})
	st := f.create("kv")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "k"), "v")
	for _, c := range []struct {
		key                      string
		read, list, write, bulkR int
	}{
		{"owner", 200, 200, 200, 200},
		{"dev", 200, 200, 200, 200},
		{"prjkey", 200, 200, 200, 200},
		{"viewer", 200, 200, 403, 200},
		{"readonly", 200, 200, 403, 200},
		{"otherprj", 403, 403, 403, 403},
		{"stranger", 404, 404, 404, 404},
	} {
		t.Run(c.key, func(t *testing.T) {
			for _, x := range []struct {
				method, path string
				body         any
				want         int
			}{
				{"GET", keyPath(st.ID, "k"), nil, c.read},
				{"GET", "/api/memory/" + st.ID + "/keys", nil, c.list},
				{"POST", "/api/memory/" + st.ID + "/bulk/get", map[string]any{"keys": []string{"k"}}, c.bulkR},
				{"PUT", keyPath(st.ID, "k"), "v", c.write},
				{"PUT", "/api/memory/" + st.ID + "/bulk", map[string]any{"entries": []map[string]any{{"key": "k", "value": "v"}}}, c.write},
				{"DELETE", keyPath(st.ID, "other"), nil, c.write},
			} {
				if r := f.call(c.key, x.method, x.path, x.body); r.Status != x.want {
					t.Errorf("%s %s: %d, want %d: %s", x.method, x.path, r.Status, x.want, r.Body)
				}
			}
		})
	}
}
