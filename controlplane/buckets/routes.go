package buckets

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Routes is the area's rows of the route table. A bucket's project is
// known once it is loaded, so the service checks the permission table
// again with it. Object keys are the rest of the path: send a key holding
// an empty, "." or ".." segment encoded as one segment (%2F for its
// slashes), since routers clean such paths. /storage/{bucketId}/{key...}
// is public: a public bucket's objects, or any object with a signed URL.
// The S3-compatible surface is not in this table: it is an http.Handler of
// its own (S3Handler).
func Routes(h Handlers) []api.Route {
	const G, P, U, A, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	var maxPut, maxPart int64 = DefaultMaxPutBytes, DefaultMaxPartBytes
	if h.S != nil {
		maxPut, maxPart = h.S.MaxPutBytes(), h.S.MaxPartBytes()
	}
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/buckets", Op: OpWrite, ProjectParam: "id", Handler: h.CreateBucket, Status: http.StatusCreated,
			Summary: "Create a storage bucket {name, public?}", Request: CreateBucketRequest{}, Response: BucketAnswer{}},
		{Method: G, Path: "/api/projects/{id}/buckets", Op: OpRead, ProjectParam: "id", Handler: h.ListBuckets,
			Summary: "The project's storage buckets with their object counts and bytes", Response: BucketList{}},
		{Method: G, Path: "/api/buckets/{id}", Op: OpRead, Handler: h.GetBucket,
			Summary: "A storage bucket", Response: BucketAnswer{}},
		{Method: A, Path: "/api/buckets/{id}", Op: OpWrite, Handler: h.UpdateBucket,
			Summary: "Make a bucket public or private {public}", Request: UpdateBucketRequest{}, Response: BucketAnswer{}},
		{Method: D, Path: "/api/buckets/{id}", Op: OpWrite, Handler: h.DeleteBucket,
			Summary: "Delete a bucket: an empty one, or with ?force=true everything it holds", Response: api.Deleted{}},
		{Method: P, Path: "/api/buckets/{id}/signing-key", Op: OpWrite, Handler: h.RotateSigningKey,
			Summary: "Replace the bucket's signing key: every signed URL issued before stops working", Response: BucketAnswer{}},
		{Method: G, Path: "/api/buckets/{id}/objects", Op: OpRead, Handler: h.ListObjects,
			Summary: "List objects in key order: ?prefix=&delimiter=&limit=&cursor= (with a delimiter, common prefixes are rolled up)", Response: ObjectPage{}},
		{Method: U, Path: "/api/buckets/{id}/objects/{key...}", Op: OpWrite, Handler: h.PutObject, MaxBody: maxPut,
			Summary: "Store an object: the body is its bytes; Content-Type, Cache-Control, Content-Disposition, Content-Encoding and X-Meta-* are kept with it", Response: ObjectAnswer{}},
		{Method: G, Path: "/api/buckets/{id}/objects/{key...}", Op: OpData, Handler: h.GetObject,
			Summary: "An object's bytes (Range honoured; HEAD for its headers only), metadata as X-Meta-* headers"},
		{Method: D, Path: "/api/buckets/{id}/objects/{key...}", Op: OpWrite, Handler: h.DeleteObject,
			Summary: "Delete an object", Response: ObjectDeleted{}},
		{Method: P, Path: "/api/buckets/{id}/signed-urls", Op: OpData, Handler: h.SignURL, Status: http.StatusCreated,
			Summary: "A URL that serves one object to anyone holding it until it expires {key, expiresIn?}", Request: SignedURLRequest{}, Response: SignedURL{}},
		{Method: P, Path: "/api/buckets/{id}/uploads", Op: OpWrite, Handler: h.CreateUpload, Status: http.StatusCreated,
			Summary: "Start a multipart upload of a large object {key, contentType?, metadata?}", Request: CreateUploadRequest{}, Response: UploadAnswer{}},
		{Method: G, Path: "/api/buckets/{id}/uploads/{uploadId}", Op: OpRead, Handler: h.GetUpload,
			Summary: "An unfinished upload and the parts it has received (to resume it)", Response: UploadAnswer{}},
		{Method: U, Path: "/api/buckets/{id}/uploads/{uploadId}/parts/{partNumber}", Op: OpWrite, Handler: h.UploadPart, MaxBody: maxPart,
			Summary: "Send part 1..10000 of an upload (the body is its bytes); sending a number again replaces it", Response: PartAnswer{}},
		{Method: P, Path: "/api/buckets/{id}/uploads/{uploadId}/complete", Op: OpWrite, Handler: h.CompleteUpload,
			Summary: "Make the object from the parts named {parts: [{partNumber, etag}]}", Request: CompleteUploadRequest{}, Response: ObjectAnswer{}},
		{Method: D, Path: "/api/buckets/{id}/uploads/{uploadId}", Op: OpWrite, Handler: h.AbortUpload,
			Summary: "Abort an upload and drop its parts", Response: api.Deleted{}},
		{Method: P, Path: "/api/projects/{id}/storage-keys", Op: OpWrite, ProjectParam: "id", Handler: h.CreateKey, Status: http.StatusCreated,
			Summary: "Issue an S3 access key {name, readOnly?, buckets?}: the secret is shown once", Request: CreateKeyRequest{}, Response: CreatedKey{}},
		{Method: G, Path: "/api/projects/{id}/storage-keys", Op: OpRead, ProjectParam: "id", Handler: h.ListKeys,
			Summary: "The project's S3 access keys (never their secrets)", Response: KeyList{}},
		{Method: D, Path: "/api/storage-keys/{id}", Op: OpWrite, Handler: h.DeleteKey,
			Summary: "Revoke an S3 access key", Response: api.Deleted{}},
		{Method: G, Path: "/storage/{bucketId}/{key...}", Public: true, Handler: h.Serve,
			Summary: "A public bucket's object, or any object with ?expires=&signature= of a signed URL (Range honoured)"},
	}
}
