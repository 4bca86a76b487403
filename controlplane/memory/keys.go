package memory

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
)

// checkKey validates a key: 1 to MaxKeyBytes bytes of UTF-8 without control
// characters, and neither "." nor ".." (path segments a client's or proxy's
// URL cleaning would change).
func checkKey(k string) error {
	switch {
	case k == "":
		return api.E(api.KindInvalid, "invalid_key", "the key is empty: name it in the path (/keys/<key>) or in keys[]")
	case len(k) > MaxKeyBytes:
		return api.E(api.KindInvalid, "key_too_long", "the key is %d bytes; keys are at most %d bytes of UTF-8", len(k), MaxKeyBytes).
			With("limit", MaxKeyBytes)
	case k == "." || k == "..":
		return api.E(api.KindInvalid, "invalid_key", "%q cannot be a key: URL paths would drop it; choose another name", k)
	}
	return checkText(k, "key")
}

// checkPrefix validates a listing's prefix: like a key, but it may be empty.
func checkPrefix(p string) error {
	if len(p) > MaxKeyBytes {
		return api.E(api.KindInvalid, "key_too_long", "the prefix is %d bytes; keys, and so prefixes, are at most %d bytes", len(p), MaxKeyBytes).
			With("limit", MaxKeyBytes)
	}
	return checkText(p, "prefix")
}

// checkText refuses what is not UTF-8 and control characters.
func checkText(s, what string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return api.E(api.KindInvalid, "invalid_key", "the %s is not UTF-8 at byte %d: percent-encode its UTF-8 bytes in the URL", what, i)
			}
		}
		if unicode.IsControl(r) {
			return api.E(api.KindInvalid, "invalid_key", "the %s holds a control character (U+%04X) at byte %d; keys are printable text", what, r, i)
		}
	}
	return nil
}

// checkMetadata validates a key's metadata, any JSON value: it returns the
// value in compact form ("" for none or null), at most MaxMetadataBytes.
func checkMetadata(raw []byte) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var buf bytes.Buffer
	if !json.Valid(raw) || json.Compact(&buf, raw) != nil {
		return "", api.E(api.KindInvalid, "invalid_metadata", "metadata must be one JSON value (an object, as a rule)")
	}
	if buf.Len() > MaxMetadataBytes {
		return "", api.E(api.KindInvalid, "metadata_too_large", "metadata is %d bytes as compact JSON; at most %d", buf.Len(), MaxMetadataBytes).
			With("limit", MaxMetadataBytes)
	}
	return buf.String(), nil
}

// checkTTL validates a time to live in seconds; 0 is none.
func checkTTL(ttl int64) error {
	if ttl < 0 || ttl > MaxTTLSeconds {
		return api.E(api.KindInvalid, "invalid_ttl", "ttlSeconds must be a whole number from 1 to %d (ten years), or absent for no expiry", MaxTTLSeconds)
	}
	return nil
}

// parseTTL reads the ttlSeconds query parameter ("" is none).
func parseTTL(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, api.E(api.KindInvalid, "invalid_ttl", "ttlSeconds must be a whole number from 1 to %d (ten years), not %q", MaxTTLSeconds, s)
	}
	return n, checkTTL(n)
}

// encodeCursor makes the opaque cursor that continues a listing after key.
func encodeCursor(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

// decodeCursor reads a cursor back into the last key of the page before.
func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || checkKey(string(b)) != nil {
		return "", api.E(api.KindInvalid, "invalid_cursor", "cursor is not one this API gave: pass the cursor of the previous page unchanged, or none for the first page")
	}
	return string(b), nil
}

// prefixEnd is the least key above every key starting with prefix, and
// false when there is none (no prefix, or one of 0xff bytes only).
func prefixEnd(prefix string) ([]byte, bool) {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1], true
		}
	}
	return nil, false
}

// headerJSON renders compact JSON for a header value: every character
// outside printable ASCII is written as a \u escape, so the header holds
// the same JSON in ASCII only.
func headerJSON(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b []byte
	for _, r := range s {
		switch {
		case r >= 0x20 && r <= 0x7e:
			b = append(b, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b = appendU(appendU(b, r1), r2)
		default:
			b = appendU(b, r)
		}
	}
	return string(b)
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
