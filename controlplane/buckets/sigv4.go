package buckets

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// AWS Signature Version 4 (the S3 surface's authentication): the request's
// canonical form is hashed and signed with a key derived from the secret,
// the date, the region and the service; the server derives the same key
// from the access key's sealed secret and compares signatures in constant
// time. Requests are signed in the Authorization header, or in the query
// (presigned URLs).
const (
	sigAlgorithm  = "AWS4-HMAC-SHA256"
	amzDateFormat = "20060102T150405Z"
	scopeTerminal = "aws4_request"
	s3Service     = "s3"

	unsignedPayload          = "UNSIGNED-PAYLOAD"
	streamingPayload         = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingPayloadTrailer  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256              = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	// maxAuthorization bounds the Authorization header and the signed
	// header list, so a parser never works on more.
	maxAuthorization = 4096
	maxSignedHeaders = 64
)

// credential is the scope a request was signed under.
type credential struct {
	AccessKey, Date, Region, Service string
}

// scope is the credential scope without the access key.
func (c credential) scope() string {
	return c.Date + "/" + c.Region + "/" + c.Service + "/" + scopeTerminal
}

// sigRequest is what a request's signature says, as parsed (not yet
// checked against a secret).
type sigRequest struct {
	Cred          credential
	SignedHeaders []string
	Signature     string // 64 lower-case hex digits
	AmzDate       string
	At            time.Time
	Presigned     bool
	Expires       time.Duration // presigned only
	// Payload is x-amz-content-sha256 (a hex SHA-256, UNSIGNED-PAYLOAD or
	// a STREAMING-* mode).
	Payload string
}

func errAuthMalformed(format string, args ...any) *opError {
	return refuse("AuthorizationHeaderMalformed", http.StatusBadRequest, api.KindInvalid, "", format, args...)
}

func errQueryMalformed(format string, args ...any) *opError {
	return refuse("AuthorizationQueryParametersError", http.StatusBadRequest, api.KindInvalid, "", format, args...)
}

func errAccessDenied(format string, args ...any) *opError {
	return refuse("AccessDenied", http.StatusForbidden, api.KindForbidden, "", format, args...)
}

func errSignature() *opError {
	return refuse("SignatureDoesNotMatch", http.StatusForbidden, api.KindForbidden, "",
		"the request signature does not match the one computed with the secret of the access key: check the secret, the region-independent signing and the clock")
}

func errUnknownKey() *opError {
	return refuse("InvalidAccessKeyId", http.StatusForbidden, api.KindForbidden, "",
		"the access key id is not one of this platform's (revoked, or of a deleted project)")
}

// parseCredential reads "AKID/20260102/region/s3/aws4_request".
func parseCredential(s string) (credential, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return credential{}, errAuthMalformed("the credential must be <access key>/<yyyymmdd>/<region>/s3/aws4_request")
	}
	c := credential{AccessKey: parts[0], Date: parts[1], Region: parts[2], Service: parts[3]}
	if c.AccessKey == "" || len(c.AccessKey) > 128 {
		return credential{}, errAuthMalformed("the credential names no access key")
	}
	for i := 0; i < len(c.AccessKey); i++ {
		if ch := c.AccessKey[i]; ch <= ' ' || ch > '~' {
			return credential{}, errAuthMalformed("the access key id must be printable ASCII")
		}
	}
	if _, err := time.Parse("20060102", c.Date); err != nil || len(c.Date) != 8 {
		return credential{}, errAuthMalformed("the credential's date must be yyyymmdd")
	}
	if !validRegion(c.Region) {
		return credential{}, errAuthMalformed("the credential's region %q is not a region", c.Region)
	}
	if c.Service != s3Service || parts[4] != scopeTerminal {
		return credential{}, errAuthMalformed("the credential must be for the s3 service and end in aws4_request")
	}
	return c, nil
}

// parseSignedHeaders reads "host;x-amz-content-sha256;x-amz-date": lower
// case, sorted, distinct, host among them.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, errAuthMalformed("SignedHeaders is empty")
	}
	hs := strings.Split(s, ";")
	if len(hs) > maxSignedHeaders {
		return nil, errAuthMalformed("at most %d signed headers", maxSignedHeaders)
	}
	host := false
	for i, h := range hs {
		if h == "" {
			return nil, errAuthMalformed("SignedHeaders holds an empty name")
		}
		for j := 0; j < len(h); j++ {
			if c := h[j]; !tokenChar(c) || (c >= 'A' && c <= 'Z') {
				return nil, errAuthMalformed("signed header %q must be a lower-case header name", h)
			}
		}
		if i > 0 && hs[i-1] >= h {
			return nil, errAuthMalformed("SignedHeaders must be sorted and distinct")
		}
		host = host || h == "host"
	}
	if !host {
		return nil, errAuthMalformed("the host header must be signed")
	}
	return hs, nil
}

// parseAuthorization reads an Authorization header:
// AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...
func parseAuthorization(h string) (credential, []string, string, error) {
	if len(h) > maxAuthorization {
		return credential{}, nil, "", errAuthMalformed("the Authorization header is longer than %d bytes", maxAuthorization)
	}
	alg, rest, ok := strings.Cut(h, " ")
	if !ok || alg != sigAlgorithm {
		return credential{}, nil, "", errAuthMalformed("only %s (Signature Version 4) is accepted", sigAlgorithm)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return credential{}, nil, "", errAuthMalformed("the Authorization header must be Credential=..., SignedHeaders=..., Signature=...")
		}
		if _, dup := fields[k]; dup {
			return credential{}, nil, "", errAuthMalformed("%s is given twice", k)
		}
		fields[k] = v
	}
	if len(fields) != 3 || fields["Credential"] == "" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return credential{}, nil, "", errAuthMalformed("the Authorization header must hold exactly Credential, SignedHeaders and Signature")
	}
	cred, err := parseCredential(fields["Credential"])
	if err != nil {
		return credential{}, nil, "", err
	}
	signed, err := parseSignedHeaders(fields["SignedHeaders"])
	if err != nil {
		return credential{}, nil, "", err
	}
	sig := fields["Signature"]
	if !isHex64(sig) {
		return credential{}, nil, "", errAuthMalformed("the signature must be 64 lower-case hex digits")
	}
	return cred, signed, sig, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isAnonymous tells whether a request carries no signature at all.
func isAnonymous(r *http.Request) bool {
	return r.Header.Get("Authorization") == "" && !r.URL.Query().Has("X-Amz-Algorithm") && !r.URL.Query().Has("X-Amz-Signature")
}

// parseSigV4 reads the signature of r, from the Authorization header or
// the query of a presigned URL.
func parseSigV4(r *http.Request) (sigRequest, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return sigRequest{}, errInvalidArgument("the query string is malformed")
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if q.Has("X-Amz-Signature") || q.Has("X-Amz-Algorithm") {
			return sigRequest{}, errInvalidArgument("sign a request in the Authorization header or in the query, not both")
		}
		cred, signed, sig, err := parseAuthorization(h)
		if err != nil {
			return sigRequest{}, err
		}
		v := sigRequest{Cred: cred, SignedHeaders: signed, Signature: sig, AmzDate: r.Header.Get("X-Amz-Date"),
			Payload: r.Header.Get("X-Amz-Content-Sha256")}
		if v.AmzDate == "" {
			return sigRequest{}, errAccessDenied("sign with an x-amz-date header")
		}
		if v.At, err = time.Parse(amzDateFormat, v.AmzDate); err != nil {
			return sigRequest{}, errAuthMalformed("x-amz-date must be yyyymmddThhmmssZ")
		}
		if v.Payload == "" {
			return sigRequest{}, refuse("InvalidRequest", http.StatusBadRequest, api.KindInvalid, "", "send x-amz-content-sha256 (the body's SHA-256, UNSIGNED-PAYLOAD or a STREAMING mode)")
		}
		return v, nil
	}
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return sigRequest{}, errQueryMalformed("X-Amz-Algorithm must be %s", sigAlgorithm)
	}
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		if len(q[k]) != 1 || q.Get(k) == "" {
			return sigRequest{}, errQueryMalformed("a presigned URL carries %s exactly once", k)
		}
	}
	cred, err := parseCredential(q.Get("X-Amz-Credential"))
	if err != nil {
		return sigRequest{}, errQueryMalformed("%s", err.(*opError).rest.Message)
	}
	signed, err := parseSignedHeaders(q.Get("X-Amz-SignedHeaders"))
	if err != nil {
		return sigRequest{}, errQueryMalformed("%s", err.(*opError).rest.Message)
	}
	v := sigRequest{Cred: cred, SignedHeaders: signed, Signature: q.Get("X-Amz-Signature"), AmzDate: q.Get("X-Amz-Date"),
		Presigned: true, Payload: unsignedPayload}
	if !isHex64(v.Signature) {
		return sigRequest{}, errQueryMalformed("X-Amz-Signature must be 64 lower-case hex digits")
	}
	if v.At, err = time.Parse(amzDateFormat, v.AmzDate); err != nil {
		return sigRequest{}, errQueryMalformed("X-Amz-Date must be yyyymmddThhmmssZ")
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > MaxSignedURLTTL {
		return sigRequest{}, errQueryMalformed("X-Amz-Expires must be 1 to %d seconds", int(MaxSignedURLTTL/time.Second))
	}
	v.Expires = time.Duration(secs) * time.Second
	if p := q.Get("X-Amz-Content-Sha256"); p != "" {
		v.Payload = p
	}
	return v, nil
}

// checkTime checks the signature's time against now: within skew for a
// signed request; for a presigned URL, not before its time (less skew)
// and not after it expires.
func (v sigRequest) checkTime(now time.Time, skew time.Duration) error {
	if v.At.Format("20060102") != v.Cred.Date {
		return errAuthMalformed("the credential's date %s is not the date of x-amz-date %s", v.Cred.Date, v.AmzDate)
	}
	if v.Presigned {
		if now.Before(v.At.Add(-skew)) {
			return errAccessDenied("the presigned URL is not valid yet")
		}
		if now.After(v.At.Add(v.Expires)) {
			return errAccessDenied("request has expired: the presigned URL was valid until %s", v.At.Add(v.Expires).Format(time.RFC3339))
		}
		return nil
	}
	if d := now.Sub(v.At); d > skew || d < -skew {
		return refuse("RequestTimeTooSkewed", http.StatusForbidden, api.KindForbidden, "",
			"the request's time %s differs from the server's by more than %s: correct the clock", v.At.Format(time.RFC3339), skew)
	}
	return nil
}

// unsignedAmzHeader returns the first x-amz-* header of r that the
// signature does not cover ("" when all are): such a header could be
// added by anyone holding a presigned URL or relaying the request.
func (v sigRequest) unsignedAmzHeader(r *http.Request) string {
	for k := range r.Header {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "x-amz-") {
			continue
		}
		i := sort.SearchStrings(v.SignedHeaders, lk)
		if i == len(v.SignedHeaders) || v.SignedHeaders[i] != lk {
			return lk
		}
	}
	return ""
}

// verify checks v's signature of r with secret. It returns the signing key
// for the chunk signatures of a streaming body.
func (v sigRequest) verify(r *http.Request, secret string) ([]byte, error) {
	if h := v.unsignedAmzHeader(r); h != "" {
		return nil, errAccessDenied("there were headers present in the request which were not signed: %s", h)
	}
	key := signingKey(secret, v.Cred.Date, v.Cred.Region, v.Cred.Service)
	want := hmacSHA256(key, []byte(v.stringToSign(r)))
	got, err := hex.DecodeString(v.Signature)
	if err != nil || subtle.ConstantTimeCompare(want, got) != 1 {
		return nil, errSignature()
	}
	return key, nil
}

// stringToSign is the string a request's signature signs.
func (v sigRequest) stringToSign(r *http.Request) string {
	cr := canonicalRequest(r, v.SignedHeaders, v.Payload, v.Presigned)
	h := sha256.Sum256([]byte(cr))
	return sigAlgorithm + "\n" + v.AmzDate + "\n" + v.Cred.scope() + "\n" + hex.EncodeToString(h[:])
}

// signingKey derives the key of a date, region and service from secret.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(date))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte(service))
	return hmacSHA256(k, []byte(scopeTerminal))
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// canonicalRequest is SigV4's canonical form of r: method, URI (the path,
// encoded once: S3 does not normalise it), sorted query, the signed
// headers with their trimmed values, the signed header names, and the
// payload hash.
func canonicalRequest(r *http.Request, signed []string, payload string, presigned bool) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	b.WriteString(awsEncode(path, true))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery, presigned))
	b.WriteByte('\n')
	for _, h := range signed {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerForSigning(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// headerForSigning is the canonical value of header h of r: its values
// trimmed, inner runs of spaces collapsed, joined with commas. Go's server
// keeps Host and the body's length apart from the headers.
func headerForSigning(r *http.Request, h string) string {
	switch h {
	case "host":
		return r.Host
	case "content-length":
		if v := r.Header.Get("Content-Length"); v != "" {
			return strings.TrimSpace(v)
		}
		if r.ContentLength >= 0 {
			return strconv.FormatInt(r.ContentLength, 10)
		}
		return ""
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return strings.Join(r.TransferEncoding, ",")
		}
	}
	vs := r.Header.Values(h)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

// canonicalQuery sorts the query's parameters by name then value, each
// encoded as SigV4 wants; a presigned URL's own signature is left out.
func canonicalQuery(raw string, presigned bool) string {
	q, _ := url.ParseQuery(raw) // checked by parseSigV4
	names := make([]string, 0, len(q))
	for k := range q {
		if presigned && k == "X-Amz-Signature" {
			continue
		}
		names = append(names, k)
	}
	type kv struct{ k, v string }
	var pairs []kv
	for _, k := range names {
		for _, v := range q[k] {
			pairs = append(pairs, kv{awsEncode(k, false), awsEncode(v, false)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// awsEncode percent-encodes every byte but A-Z a-z 0-9 - _ . ~ (and /
// when keepSlash), upper-case hex, as SigV4 and S3 listings encode.
func awsEncode(s string, keepSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keepSlash) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
