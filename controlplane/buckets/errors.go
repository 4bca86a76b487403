package buckets

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// opError is a refusal of a storage operation with its shape on both
// surfaces: the S3 error code and status, and the REST API's *api.Error
// (which errors.As finds through Unwrap, so REST handlers return it as is).
type opError struct {
	s3Code   string
	s3Status int
	rest     *api.Error
}

func (e *opError) Error() string { return e.rest.Message }

func (e *opError) Unwrap() error { return e.rest }

// refuse builds an opError: the S3 code and status, the REST kind and code,
// and one message for both.
func refuse(s3Code string, s3Status int, kind api.Kind, code, format string, args ...any) *opError {
	return &opError{s3Code: s3Code, s3Status: s3Status, rest: api.E(kind, code, format, args...)}
}

// with adds a field to the REST error object.
func (e *opError) with(k string, v any) *opError {
	c := *e
	c.rest = e.rest.With(k, v)
	return &c
}

func errNoSuchBucket() *opError {
	return refuse("NoSuchBucket", http.StatusNotFound, api.KindNotFound, "", "bucket not found")
}

func errNoSuchKey() *opError {
	return refuse("NoSuchKey", http.StatusNotFound, api.KindNotFound, "", "object not found")
}

func errNoSuchUpload() *opError {
	return refuse("NoSuchUpload", http.StatusNotFound, api.KindNotFound, "upload_not_found",
		"upload not found: it was completed, aborted or has expired; start a new one")
}

func errTooLarge(limit int64) *opError {
	return refuse("EntityTooLarge", http.StatusBadRequest, api.KindTooLarge, "object_too_large",
		"the body is larger than the %d bytes allowed here: send larger objects as a multipart upload", limit).with("limit", limit)
}

func errPartTooLarge(limit int64) *opError {
	return refuse("EntityTooLarge", http.StatusBadRequest, api.KindTooLarge, "part_too_large",
		"a part is at most %d bytes", limit).with("limit", limit)
}

func errIncomplete(got, want int64) *opError {
	if got < 0 {
		return refuse("IncompleteBody", http.StatusBadRequest, api.KindInvalid, "incomplete_body",
			"the body ended before the %d bytes announced: send it again", want)
	}
	return refuse("IncompleteBody", http.StatusBadRequest, api.KindInvalid, "incomplete_body",
		"the body ended after %d of the %d bytes announced: send it again", got, want)
}

func errBadDigest(what string) *opError {
	return refuse("BadDigest", http.StatusBadRequest, api.KindInvalid, "bad_digest",
		"the %s sent does not match the body received: nothing was stored", what)
}

func errSHA256Mismatch() *opError {
	return refuse("XAmzContentSHA256Mismatch", http.StatusBadRequest, api.KindInvalid, "bad_digest",
		"the body's SHA-256 does not match x-amz-content-sha256: nothing was stored")
}

func errInvalidArgument(format string, args ...any) *opError {
	return refuse("InvalidArgument", http.StatusBadRequest, api.KindInvalid, "", format, args...)
}

// errKey maps a key refusal of ValidateKey.
func errKey(err error) *opError {
	if errors.Is(err, ErrKeyTooLong) {
		return refuse("KeyTooLongError", http.StatusBadRequest, api.KindInvalid, "invalid_key", "%s", trimScope(err)).with("limit", MaxKeyBytes)
	}
	return refuse("InvalidArgument", http.StatusBadRequest, api.KindInvalid, "invalid_key", "%s", trimScope(err))
}

func errMetadata(err error) *opError {
	return refuse("InvalidArgument", http.StatusBadRequest, api.KindInvalid, "invalid_metadata", "%s", trimScope(err))
}

// errQuota is the plan's byte cap: 402 plan_limit on REST, 403
// QuotaExceeded on S3 (a 4xx, which S3 clients do not retry).
func errQuota(plan string, limit, used, adding int64) *opError {
	return refuse("QuotaExceeded", http.StatusForbidden, api.KindPaymentRequired, "plan_limit",
		"the %s plan's buckets hold at most %d bytes; the workspace's hold %d and this adds %d: delete objects or move to a larger plan",
		plan, limit, used, adding).with("limit", limit).with("current", used)
}

func errPartTooSmall(n int, size, min int64) *opError {
	return refuse("EntityTooSmall", http.StatusBadRequest, api.KindInvalid, "part_too_small",
		"part %d is %d bytes: every part but the last must be at least %d bytes", n, size, min).with("partNumber", n)
}

func errInvalidPart(n int) *opError {
	return refuse("InvalidPart", http.StatusBadRequest, api.KindInvalid, "invalid_part",
		"part %d was not uploaded, or its ETag is not the one given: list the upload's parts", n).with("partNumber", n)
}

func errInvalidPartOrder() *opError {
	return refuse("InvalidPartOrder", http.StatusBadRequest, api.KindInvalid, "invalid_part_order",
		"list the parts in ascending part-number order, each once")
}

func errObjectTooLarge(size, limit int64) *opError {
	return refuse("EntityTooLarge", http.StatusBadRequest, api.KindTooLarge, "object_too_large",
		"the parts add up to %d bytes; an object is at most %d", size, limit).with("limit", limit)
}

func errMalformed(format string, args ...any) *opError {
	return refuse("MalformedXML", http.StatusBadRequest, api.KindInvalid, "", format, args...)
}

// errInternal wraps a failure the client cannot fix: logged, never sent.
func errInternal(err error) error {
	return fmt.Errorf("buckets: %w", err)
}
