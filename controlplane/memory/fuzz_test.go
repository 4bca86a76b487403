package memory

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCheckKey: a key is accepted only when it is 1 to MaxKeyBytes bytes
// of UTF-8 without control characters and neither "." nor ".."; an
// accepted key, percent-encoded by a client, reaches the handler
// unchanged through the router; its cursor reads back as itself; and every
// prefix of it bounds it (prefix <= key < prefixEnd(prefix)).
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"a", "user/42", "a//b/../c", ".", "..", "", "\x00", "a\nb", "\xff", "ключ/🔑", "%2F", strings.Repeat("k", MaxKeyBytes+1), "\u0085", "what? #1"} {
		f.Add(s)
	}
	var got string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/memory/{id}/keys/{key...}", func(_ http.ResponseWriter, r *http.Request) { got = r.PathValue("key") })
	f.Fuzz(func(t *testing.T, k string) {
		err := checkKey(k)
		want := len(k) >= 1 && len(k) <= MaxKeyBytes && utf8.ValidString(k) && !strings.ContainsFunc(k, unicode.IsControl) && k != "." && k != ".."
		if (err == nil) != want {
			t.Fatalf("checkKey(%q) = %v, want accepted %v", k, err, want)
		}
		if err != nil {
			return
		}
		got = "\x00unset"
		req := httptest.NewRequest("GET", "/api/memory/mem_1/keys/"+url.PathEscape(k), nil)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || got != k {
			t.Fatalf("key %q reached the handler as %q (status %d)", k, got, rec.Code)
		}
		if back, err := decodeCursor(encodeCursor(k)); err != nil || back != k {
			t.Fatalf("cursor of %q reads back as %q, %v", k, back, err)
		}
		for i := range len(k) + 1 {
			p := k[:i]
			if end, ok := prefixEnd(p); !(p <= k && (!ok || bytes.Compare([]byte(k), end) < 0)) {
				t.Fatalf("prefix %q (end %q, %v) does not bound %q", p, end, ok, k)
			}
		}
	})
}

// FuzzMetadata: metadata is accepted only as one JSON value of at most
// MaxMetadataBytes compact; what is stored is compact, and the header form
// is printable ASCII that decodes to the same value.
func FuzzMetadata(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "name" : "Zoë 🔑" } `, `null`, ``, `[1,2`, `"x"`, `{"a":"\u0000"}`, `{"a":1}{"b":2}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		meta, err := checkMetadata(raw)
		if err != nil || meta == "" {
			return
		}
		if len(meta) > MaxMetadataBytes || !json.Valid([]byte(meta)) {
			t.Fatalf("accepted %q as %q", raw, meta)
		}
		var compact bytes.Buffer
		json.Compact(&compact, []byte(meta))
		if compact.String() != meta {
			t.Fatalf("stored %q is not compact", meta)
		}
		h := headerJSON(meta)
		for i := 0; i < len(h); i++ {
			if h[i] < 0x20 || h[i] > 0x7e {
				t.Fatalf("header form %q has byte %#x", h, h[i])
			}
		}
		var a, b any
		if decodeNumbers(meta, &a) != nil || decodeNumbers(h, &b) != nil {
			t.Fatalf("header form %q of %q does not decode", h, meta)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("header form %q decodes to %s, stored %s", h, jb, ja)
		}
	})
}

// decodeNumbers decodes s keeping numbers as written (1E700 is valid JSON
// that a float64 cannot hold).
func decodeNumbers(s string, v any) error {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	return d.Decode(v)
}
