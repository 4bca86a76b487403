package buckets

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"
)

// Refusals of names, keys and metadata; the REST and S3 surfaces map them to
// their own shapes (errors.Is).
var (
	// ErrBadKey: not 1-1024 bytes of UTF-8 without control characters.
	ErrBadKey = errors.New("buckets: bad object key")
	// ErrKeyTooLong: more than MaxKeyBytes.
	ErrKeyTooLong = errors.New("buckets: object key too long")
	// ErrBadBucketName: not 3-63 of a-z, 0-9 and -, starting and ending
	// with a letter or digit.
	ErrBadBucketName = errors.New("buckets: bad bucket name")
	// ErrBadMetadata: a metadata name or value that cannot be a header, or
	// more than MaxMetadataBytes.
	ErrBadMetadata = errors.New("buckets: bad metadata")
)

// ValidateKey checks an object key: 1 to MaxKeyBytes bytes of valid UTF-8
// with no control characters (U+0000-U+001F, U+007F): they cannot be sent
// in a header or an XML listing. Any other character is allowed, slashes,
// dot segments and empty segments included, as on S3.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: a key is 1 to %d bytes; got an empty one", ErrBadKey, MaxKeyBytes)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: a key is at most %d bytes of UTF-8; got %d", ErrKeyTooLong, MaxKeyBytes, len(key))
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: a key must be valid UTF-8", ErrBadKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: a key may not hold control characters (byte %d is 0x%02x)", ErrBadKey, i, c)
		}
	}
	return nil
}

// validPrefix checks a listing prefix, delimiter or start key: like a key,
// but it may be empty.
func validPrefix(s string) bool { return s == "" || ValidateKey(s) == nil }

// ValidateBucketName checks a bucket name: 3 to 63 of a-z, 0-9 and -,
// starting and ending with a letter or digit (S3's rules without dots, so
// a name is always one DNS label).
func ValidateBucketName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("%w: a bucket name is 3 to 63 characters; got %d", ErrBadBucketName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1) {
			return fmt.Errorf("%w: use a-z, 0-9 and - (not first or last) in %q", ErrBadBucketName, name)
		}
	}
	return nil
}

// validRegion tells whether s can be a region in a credential scope.
func validRegion(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// tokenChar tells whether c may appear in an HTTP header name.
func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// headerValue tells whether v can be sent as a header value: printable
// ASCII and spaces, at most MaxHeaderValue bytes.
func headerValue(v string) bool {
	if len(v) > MaxHeaderValue {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// ValidateMetadata checks user metadata and returns it with lower-case
// names: each name a header token, each value printable ASCII, names and
// values together at most MaxMetadataBytes.
func ValidateMetadata(md map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(md))
	total := 0
	for k, v := range md {
		name := strings.ToLower(k)
		if name == "" {
			return nil, fmt.Errorf("%w: a metadata name may not be empty", ErrBadMetadata)
		}
		for i := 0; i < len(name); i++ {
			if !tokenChar(name[i]) {
				return nil, fmt.Errorf("%w: metadata name %q may hold only letters, digits and !#$%%&'*+-.^_`|~", ErrBadMetadata, k)
			}
		}
		if !headerValue(v) {
			return nil, fmt.Errorf("%w: the value of %q must be printable ASCII (encode other text, e.g. as base64)", ErrBadMetadata, k)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: metadata name %q given twice", ErrBadMetadata, name)
		}
		out[name] = v
		total += len(name) + len(v)
	}
	if total > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: metadata is at most %d bytes (names and values); got %d", ErrBadMetadata, MaxMetadataBytes, total)
	}
	return out, nil
}

// metadataFromHeader collects the metadata headers of h whose names start
// with prefix (X-Amz-Meta- on S3, X-Meta- on the REST API).
func metadataFromHeader(h http.Header, prefix string) (map[string]string, error) {
	md := map[string]string{}
	for k, vs := range h {
		if len(k) > len(prefix) && strings.EqualFold(k[:len(prefix)], prefix) {
			md[k[len(prefix):]] = strings.Join(vs, ",")
		}
	}
	return ValidateMetadata(md)
}

// setMetadataHeaders writes md as headers named prefix + name, in name
// order.
func setMetadataHeaders(h http.Header, prefix string, md map[string]string) {
	names := make([]string, 0, len(md))
	for k := range md {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		h[http.CanonicalHeaderKey(prefix+k)] = []string{md[k]}
	}
}
