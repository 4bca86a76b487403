package buckets

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve the area's REST routes.
type Handlers struct{ S *Service }

// CreateBucket answers POST /api/projects/{id}/buckets.
func (h Handlers) CreateBucket(w http.ResponseWriter, r *http.Request) error {
	var req CreateBucketRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	b, err := h.S.CreateBucket(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, BucketAnswer{Bucket: b}, err)
}

// ListBuckets answers GET /api/projects/{id}/buckets.
func (h Handlers) ListBuckets(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.Buckets(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, l, err)
}

// GetBucket answers GET /api/buckets/{id}.
func (h Handlers) GetBucket(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.GetBucket(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, BucketAnswer{Bucket: b}, err)
}

// UpdateBucket answers PATCH /api/buckets/{id}.
func (h Handlers) UpdateBucket(w http.ResponseWriter, r *http.Request) error {
	var req UpdateBucketRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	b, err := h.S.UpdateBucket(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, BucketAnswer{Bucket: b}, err)
}

// DeleteBucket answers DELETE /api/buckets/{id}?force=true.
func (h Handlers) DeleteBucket(w http.ResponseWriter, r *http.Request) error {
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		return api.Invalid("force must be true or false")
	}
	id := r.PathValue("id")
	err := h.S.DeleteBucket(r.Context(), api.PrincipalFrom(r.Context()), id, force)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// RotateSigningKey answers POST /api/buckets/{id}/signing-key.
func (h Handlers) RotateSigningKey(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.RotateSigningKey(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, BucketAnswer{Bucket: b}, err)
}

// ObjectAnswer wraps one object.
type ObjectAnswer struct {
	Object Object `json:"object"`
}

// ObjectDeleted is the answer of deleting an object.
type ObjectDeleted struct {
	Key     string `json:"key"`
	Deleted bool   `json:"deleted"`
}

// ObjectPage is one page of a bucket's listing: objects and, with a
// delimiter, the common prefixes rolled up, in key order.
type ObjectPage struct {
	Objects    []Object `json:"objects"`
	Prefixes   []string `json:"prefixes" doc:"with a delimiter: each distinct key part up to and including the delimiter, listed once instead of its objects"`
	NextCursor *string  `json:"nextCursor" doc:"pass as cursor for the next page; null on the last"`
}

// DefaultListLimit is a REST listing's page size when none is asked.
const DefaultListLimit = 100

// PutObject answers PUT /api/buckets/{id}/objects/{key...}: the body is the
// object; Content-Type, Cache-Control, Content-Disposition, Content-Encoding
// and X-Meta-* headers are stored with it; Content-MD5 is checked.
func (h Handlers) PutObject(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	md, err := metadataFromHeader(r.Header, "X-Meta-")
	if err != nil {
		return errMetadata(err)
	}
	in := putInput{Key: r.PathValue("key"), Body: r.Body, Size: r.ContentLength, headers: headers{ContentType: r.Header.Get("Content-Type"),
		CacheControl: r.Header.Get("Cache-Control"), Disposition: r.Header.Get("Content-Disposition"), Encoding: r.Header.Get("Content-Encoding"), Metadata: md}}
	if v := r.Header.Get("Content-Md5"); v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(raw) != 16 {
			return api.E(api.KindInvalid, "bad_digest", "Content-MD5 must be the base64 of 16 bytes")
		}
		in.ContentMD5 = raw
	}
	o, err := h.S.putObject(r.Context(), b, in)
	return api.Reply(w, http.StatusOK, ObjectAnswer{Object: h.S.objectView(b, o)}, err)
}

// GetObject answers GET and HEAD /api/buckets/{id}/objects/{key...} with
// the object's bytes (Range honoured) and its headers (metadata as X-Meta-*).
func (h Handlers) GetObject(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpData)
	if err != nil {
		return err
	}
	o, err := h.S.headObject(r.Context(), b, r.PathValue("key"))
	if err != nil {
		return err
	}
	return h.S.writeObject(w, r, o, "private, no-store", "X-Meta-", nil)
}

// DeleteObject answers DELETE /api/buckets/{id}/objects/{key...}.
func (h Handlers) DeleteObject(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	err = h.S.deleteObjectKey(r.Context(), b, key)
	return api.Reply(w, http.StatusOK, ObjectDeleted{Key: key, Deleted: true}, err)
}

// ListObjects answers GET /api/buckets/{id}/objects?prefix=&delimiter=&cursor=&limit=.
func (h Handlers) ListObjects(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpRead)
	if err != nil {
		return err
	}
	limit, cursor, err := api.Page(r, DefaultListLimit, MaxListKeys, "cursor")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l, err := h.S.list(r.Context(), b, listQuery{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), Token: cursor, Max: limit})
	if err != nil {
		return err
	}
	page := ObjectPage{Objects: make([]Object, 0, len(l.Objects)), Prefixes: l.Prefixes}
	if page.Prefixes == nil {
		page.Prefixes = []string{}
	}
	for _, o := range l.Objects {
		page.Objects = append(page.Objects, h.S.objectView(b, o))
	}
	if l.Truncated {
		page.NextCursor = &l.Next
	}
	return api.Reply(w, http.StatusOK, page, nil)
}

// SignURL answers POST /api/buckets/{id}/signed-urls.
func (h Handlers) SignURL(w http.ResponseWriter, r *http.Request) error {
	var req SignedURLRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	u, err := h.S.SignURL(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, u, err)
}

// CreateUploadRequest is the body of POST /api/buckets/{id}/uploads.
type CreateUploadRequest struct {
	Key                string            `json:"key"`
	ContentType        string            `json:"contentType,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

// CompleteUploadRequest is the body of POST /api/buckets/{id}/uploads/{uploadId}/complete.
type CompleteUploadRequest struct {
	Parts []CompletePart `json:"parts" doc:"the parts that make the object, in ascending partNumber order, each with the etag its upload answered"`
}

// UploadAnswer wraps one upload.
type UploadAnswer struct {
	Upload Upload `json:"upload"`
}

// PartAnswer wraps one received part.
type PartAnswer struct {
	Part Part `json:"part"`
}

// CreateUpload answers POST /api/buckets/{id}/uploads.
func (h Handlers) CreateUpload(w http.ResponseWriter, r *http.Request) error {
	var req CreateUploadRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	u, err := h.S.createUpload(r.Context(), b, req.Key, headers{ContentType: req.ContentType, CacheControl: req.CacheControl,
		Disposition: req.ContentDisposition, Encoding: req.ContentEncoding, Metadata: req.Metadata})
	return api.Reply(w, http.StatusCreated, UploadAnswer{Upload: uploadView(u, nil)}, err)
}

// GetUpload answers GET /api/buckets/{id}/uploads/{uploadId}: the upload
// and the parts it has received (to resume it).
func (h Handlers) GetUpload(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpRead)
	if err != nil {
		return err
	}
	u, parts, err := h.S.listUploadParts(r.Context(), b, r.PathValue("uploadId"), "")
	return api.Reply(w, http.StatusOK, UploadAnswer{Upload: uploadView(u, parts)}, err)
}

// UploadPart answers PUT /api/buckets/{id}/uploads/{uploadId}/parts/{partNumber}.
func (h Handlers) UploadPart(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("partNumber"))
	if err != nil {
		return errInvalidArgument("the part number must be a whole number from 1 to %d", MaxParts)
	}
	in := putInput{Body: r.Body, Size: r.ContentLength}
	if v := r.Header.Get("Content-Md5"); v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(raw) != 16 {
			return api.E(api.KindInvalid, "bad_digest", "Content-MD5 must be the base64 of 16 bytes")
		}
		in.ContentMD5 = raw
	}
	p, err := h.S.uploadPartBody(r.Context(), b, r.PathValue("uploadId"), "", n, in)
	return api.Reply(w, http.StatusOK, PartAnswer{Part: Part{PartNumber: p.Number, Size: p.Size, ETag: p.ETag, LastModified: p.CreatedAt}}, err)
}

// CompleteUpload answers POST /api/buckets/{id}/uploads/{uploadId}/complete.
func (h Handlers) CompleteUpload(w http.ResponseWriter, r *http.Request) error {
	var req CompleteUploadRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	o, err := h.S.completeUpload(r.Context(), b, r.PathValue("uploadId"), "", req.Parts)
	return api.Reply(w, http.StatusOK, ObjectAnswer{Object: h.S.objectView(b, o)}, err)
}

// AbortUpload answers DELETE /api/buckets/{id}/uploads/{uploadId}.
func (h Handlers) AbortUpload(w http.ResponseWriter, r *http.Request) error {
	b, err := h.S.load(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), OpWrite)
	if err != nil {
		return err
	}
	id := r.PathValue("uploadId")
	err = h.S.abortUpload(r.Context(), b, id, "")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// Serve answers GET and HEAD /storage/{bucketId}/{key...}: public buckets'
// objects, and any object through a signed URL.
func (h Handlers) Serve(w http.ResponseWriter, r *http.Request) error {
	return h.S.serveStorage(w, r, r.PathValue("bucketId"), r.PathValue("key"))
}

// CreateKey answers POST /api/projects/{id}/storage-keys.
func (h Handlers) CreateKey(w http.ResponseWriter, r *http.Request) error {
	var req CreateKeyRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	k, err := h.S.CreateKey(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, k, err)
}

// ListKeys answers GET /api/projects/{id}/storage-keys.
func (h Handlers) ListKeys(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.Keys(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, l, err)
}

// DeleteKey answers DELETE /api/storage-keys/{id}.
func (h Handlers) DeleteKey(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimSpace(r.PathValue("id"))
	err := h.S.DeleteKey(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}
