package buckets

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSigV4 feeds the Authorization header parser, the presigned query
// parser and the canonical request arbitrary input: none panics, and what
// the header parser accepts is well-formed (a five-part credential for s3,
// sorted distinct lower-case signed headers with host, a 64-hex-digit
// signature).
func FuzzSigV4(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AK/20260102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature="+strings.Repeat("a", 64),
		"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20260102%2Fauto%2Fs3%2Faws4_request&X-Amz-Date=20260102T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature="+strings.Repeat("b", 64))
	f.Add("AWS4-HMAC-SHA256 Credential=/,SignedHeaders=;,Signature=", "list-type=2&prefix=a%2Fb&delimiter=%2F")
	f.Add("AWS4-HMAC-SHA256 Credential==,=,=", "%zz&;=")
	f.Fuzz(func(t *testing.T, header, query string) {
		cred, signed, sig, err := parseAuthorization(header)
		if err == nil {
			if cred.Service != s3Service || cred.AccessKey == "" || len(cred.Date) != 8 || !validRegion(cred.Region) {
				t.Fatalf("accepted credential %+v", cred)
			}
			if !sort.StringsAreSorted(signed) || !isHex64(sig) {
				t.Fatalf("accepted signed headers %q, signature %q", signed, sig)
			}
			for i := 1; i < len(signed); i++ {
				if signed[i] == signed[i-1] {
					t.Fatalf("duplicate signed header %q", signed[i])
				}
			}
		}
		req := &http.Request{Method: "GET", URL: &url.URL{Path: "/b/k", RawQuery: query}, Header: http.Header{}, Host: "h"}
		req.Header.Set("Authorization", header)
		if v, err := parseSigV4(req); err == nil {
			canonicalRequest(req, v.SignedHeaders, v.Payload, v.Presigned)
		}
		req.Header.Del("Authorization")
		if v, err := parseSigV4(req); err == nil {
			if !v.Presigned || v.Expires <= 0 || v.Expires > MaxSignedURLTTL {
				t.Fatalf("accepted presigned %+v", v)
			}
			canonicalRequest(req, v.SignedHeaders, v.Payload, true)
		}
	})
}

// FuzzChunked feeds the aws-chunked decoder arbitrary bodies, signed and
// unsigned, with and without a trailer: it never panics, never returns
// more bytes than announced, and succeeds on a signed body only when the
// body is exactly one minio-go signed.
func FuzzChunked(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), false, false)
	f.Add([]byte("0\r\nx-amz-checksum-crc32:AAAAAA==\n\r\n\r\n"), false, true)
	f.Add([]byte("3;chunk-signature="+strings.Repeat("0", 64)+"\r\nabc\r\n0;chunk-signature="+strings.Repeat("0", 64)+"\r\n\r\n"), true, false)
	f.Add([]byte("ffffffffffffffff\r\n"), false, false)
	v := sigRequest{Cred: credential{AccessKey: "K", Date: "20260102", Region: "us-east-1", Service: "s3"}, AmzDate: "20260102T000000Z",
		Signature: strings.Repeat("0", 64)}
	key := signingKey("secret", "20260102", "us-east-1", "s3")
	f.Fuzz(func(t *testing.T, body []byte, signed, trailer bool) {
		k := key
		if !signed {
			k = nil
		}
		var tc *checksum
		if trailer {
			tc = &checksum{name: "crc32", h: checksumAlgos["crc32"]()}
		}
		const announced = 64
		got, err := io.ReadAll(io.LimitReader(newChunkedReader(bytes.NewReader(body), k, v, tc, announced), 1<<20))
		if len(got) > announced {
			t.Fatalf("decoded %d bytes, more than the %d announced", len(got), announced)
		}
		if err == nil && signed {
			t.Fatalf("a signed body with made-up signatures was accepted: %q", body)
		}
		if err == nil && len(got) != announced {
			t.Fatalf("accepted %d bytes of %d announced", len(got), announced)
		}
	})
}

// FuzzObjectKey: a key ValidateKey accepts is 1-1024 bytes of UTF-8
// without control characters; its URL path decodes back to it; the
// successor of any key bounds exactly the keys it prefixes; a listing
// token round-trips.
func FuzzObjectKey(f *testing.F) {
	for _, k := range []string{"a", "a/b", "a//b", "../x", ".", "é/ü", "\U0010FFFF", "a\x00b", "\xff", strings.Repeat("k", 1025), "%2F"} {
		f.Add(k, "x")
	}
	f.Fuzz(func(t *testing.T, key, other string) {
		err := ValidateKey(key)
		if err != nil {
			return
		}
		if len(key) == 0 || len(key) > MaxKeyBytes || !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("accepted key %q", key)
		}
		if back, err := url.PathUnescape(keyPath(key)); err != nil || back != key {
			t.Fatalf("keyPath(%q) = %q decodes to %q, %v", key, keyPath(key), back, err)
		}
		for _, seg := range strings.Split(keyPath(key), "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("keyPath(%q) = %q has a segment a router cleans", key, keyPath(key))
			}
		}
		if succ, ok := successor(key); ok {
			if !(key < succ) {
				t.Fatalf("successor(%q) = %q is not greater", key, succ)
			}
			if utf8.ValidString(other) && strings.HasPrefix(other, key) && !(other < succ) {
				t.Fatalf("%q starts with %q but is not below its successor %q", other, key, succ)
			}
			if utf8.ValidString(other) && !strings.HasPrefix(other, key) && other > key && other < succ {
				t.Fatalf("%q lies between %q and its successor %q without the prefix", other, key, succ)
			}
		}
		for _, kind := range []byte{'k', 'p'} {
			if gk, gs, ok := parseListToken(listToken(kind, key)); !ok || gk != kind || gs != key {
				t.Fatalf("token of %q does not round-trip", key)
			}
		}
	})
}
