package buckets

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Signed URLs: GET {PublicBaseURL}/storage/{bucketId}/{key}?expires=<unix
// seconds>&signature=<base64url HMAC-SHA256>, the HMAC of
// "GET\n{bucketId}\n{key}\n{expires}" under the bucket's signing key
// (32 random bytes, sealed at rest). The key never leaves the server; a
// rotation (POST /api/buckets/{id}/signing-key) voids every URL signed
// before.

// SignedURLRequest is the body of POST /api/buckets/{id}/signed-urls.
type SignedURLRequest struct {
	Key string `json:"key"`
	// ExpiresIn is the URL's life in seconds (1 to 604800; default 3600).
	ExpiresIn int `json:"expiresIn,omitempty" doc:"seconds the URL works, 1 to 604800 (seven days); default 3600"`
}

// SignedURL is a URL that serves one private object until ExpiresAt.
type SignedURL struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// objectURL is where an object is served: PublicBaseURL, /storage/, the
// bucket id and the key, encoded so that no router cleans it: each segment
// escaped, and a key with an empty, "." or ".." segment escaped whole
// (slashes and dots as %2F and %2E).
func (s *Service) objectURL(bucketID, key string) string {
	return s.cfg.PublicBaseURL + "/storage/" + bucketID + "/" + keyPath(key)
}

func keyPath(key string) string {
	segs := strings.Split(key, "/")
	whole := false
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			whole = true
		}
	}
	if whole {
		return strings.ReplaceAll(url.PathEscape(key), ".", "%2E")
	}
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

// signature is the URL signature of key in bucketID until expires.
func signature(signingKey []byte, bucketID, key string, expires int64) string {
	m := hmac.New(sha256.New, signingKey)
	fmt.Fprintf(m, "GET\n%s\n%s\n%d", bucketID, key, expires)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signingKey opens bucket b's signing key.
func (s *Service) bucketKey(b bucketRow) ([]byte, error) {
	k, err := s.d.Sealer.Open(b.SigningKey, []byte("bucket-signing:"+b.ID))
	if err != nil {
		return nil, errInternal(fmt.Errorf("signing key of %s: %w", b.ID, err))
	}
	return k, nil
}

// SignURL makes a URL that serves an existing object of a bucket (private
// or public) to whoever holds it until it expires.
func (s *Service) SignURL(ctx context.Context, pr *auth.Principal, bucketID string, req SignedURLRequest) (SignedURL, error) {
	b, err := s.load(ctx, pr, bucketID, OpData)
	if err != nil {
		return SignedURL{}, err
	}
	ttl := DefaultSignedURLTTL
	if req.ExpiresIn != 0 {
		ttl = time.Duration(req.ExpiresIn) * time.Second
		if req.ExpiresIn < 1 || ttl > MaxSignedURLTTL {
			return SignedURL{}, api.Invalid("expiresIn must be 1 to %d seconds", int(MaxSignedURLTTL/time.Second))
		}
	}
	if _, err := s.headObject(ctx, b, req.Key); err != nil {
		return SignedURL{}, err
	}
	key, err := s.bucketKey(b)
	if err != nil {
		return SignedURL{}, err
	}
	exp := s.now().Add(ttl).Truncate(time.Second)
	u := s.objectURL(b.ID, req.Key) + "?expires=" + strconv.FormatInt(exp.Unix(), 10) + "&signature=" + signature(key, b.ID, req.Key, exp.Unix())
	return SignedURL{URL: u, ExpiresAt: exp}, nil
}

// Serving errors of /storage: the same answer whether the object is
// missing or the bucket private, so a URL without a signature tells
// nothing of what a private bucket holds.
func errNotServed() error {
	return api.E(api.KindNotFound, "", "not found: a private bucket's objects are served only with a signed URL")
}

// serveStorage answers GET and HEAD /storage/{bucketId}/{key...}: a public
// bucket's objects to anyone; any bucket's object with a valid, unexpired
// signature.
func (s *Service) serveStorage(w http.ResponseWriter, r *http.Request, bucketID, key string) error {
	b, err := getBucket(r.Context(), s.d.DB, bucketID)
	if errors.Is(err, store.ErrNotFound) {
		return errNotServed()
	}
	if err != nil {
		return errInternal(err)
	}
	q := r.URL.Query()
	signed := q.Has("signature") || q.Has("expires")
	cache := ""
	if signed {
		exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
		if err != nil || len(q["expires"]) != 1 || len(q["signature"]) != 1 {
			return api.E(api.KindForbidden, "invalid_signature", "a signed URL carries expires and signature once each: ask for a new one")
		}
		k, err := s.bucketKey(b)
		if err != nil {
			return err
		}
		if !hmac.Equal([]byte(signature(k, b.ID, key, exp)), []byte(q.Get("signature"))) {
			return api.E(api.KindForbidden, "invalid_signature", "the URL's signature is not valid (altered, or the bucket's signing key was replaced): ask for a new one")
		}
		left := time.Unix(exp, 0).Sub(s.now())
		if left < 0 {
			return api.E(api.KindForbidden, "url_expired", "the signed URL expired at %s: ask for a new one", time.Unix(exp, 0).UTC().Format(time.RFC3339))
		}
		cache = fmt.Sprintf("private, max-age=%d", int(min(left, time.Hour)/time.Second))
	} else if !b.Public {
		return errNotServed()
	}
	if ValidateKey(key) != nil {
		return errNotServed()
	}
	o, err := getObject(r.Context(), s.d.DB, b.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return errNotServed()
	}
	if err != nil {
		return errInternal(err)
	}
	if cache == "" {
		cache = o.CacheControl
		if cache == "" {
			cache = DefaultPublicCacheControl
		}
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	return s.writeObject(w, r, o, cache, "X-Meta-", nil)
}

// writeObject answers with an object's bytes (Range and conditional
// requests honoured) and headers: its stored ones, metadata under
// metaPrefix, and overrides (S3's response-* parameters). Stored bytes
// are never run by a browser in this origin: Content-Security-Policy
// sandbox and nosniff go with every object.
func (s *Service) writeObject(w http.ResponseWriter, r *http.Request, o objectRow, cacheControl, metaPrefix string, overrides map[string]string) error {
	body, err := s.openObject(r.Context(), o)
	if err != nil {
		return err
	}
	defer body.Close()
	h := w.Header()
	setObjectHeaders(h, o, metaPrefix)
	if cacheControl != "" {
		h.Set("Cache-Control", cacheControl)
	}
	for k, v := range overrides {
		h.Set(k, v)
	}
	http.ServeContent(w, r, "", o.CreatedAt, body)
	return nil
}

// setObjectHeaders writes an object's stored headers.
func setObjectHeaders(h http.Header, o objectRow, metaPrefix string) {
	h.Set("Content-Type", o.ContentType)
	h.Set("ETag", `"`+o.ETag+`"`)
	h.Set("Last-Modified", o.CreatedAt.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	if o.CacheControl != "" {
		h.Set("Cache-Control", o.CacheControl)
	}
	if o.Disposition != "" {
		h.Set("Content-Disposition", o.Disposition)
	}
	if o.Encoding != "" {
		h.Set("Content-Encoding", o.Encoding)
	}
	setMetadataHeaders(h, metaPrefix, o.Metadata)
}
