package memory

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Routes is the area's rows of the route table. A store's project is known
// once it is loaded, so the service checks the permission table again with
// it (a key of another project gets 403 project_key_mismatch). Keys are
// named by the rest of the path after /keys/, percent-encoded (a "/" may be
// sent as is).
func Routes(h Handlers) []api.Route {
	const G, P, U, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/memory", Op: OpWrite, ProjectParam: "id", Handler: h.CreateStore, Status: http.StatusCreated,
			Summary: "Create a memory store (key-value) {name}", Request: CreateRequest{}, Response: StoreAnswer{}},
		{Method: G, Path: "/api/projects/{id}/memory", Op: OpRead, ProjectParam: "id", Handler: h.ListStores,
			Summary: "A project's memory stores with their key counts, bytes and limits", Response: StoreList{}},
		{Method: G, Path: "/api/memory/{id}", Op: OpRead, Handler: h.GetStore,
			Summary: "A memory store: key count, bytes and limits", Response: StoreAnswer{}},
		{Method: D, Path: "/api/memory/{id}", Op: OpWrite, Handler: h.DeleteStore,
			Summary: "Delete a memory store with all its keys", Response: api.Deleted{}},
		{Method: G, Path: "/api/memory/{id}/keys", Op: OpRead, Handler: h.ListKeys,
			Summary: "List keys in byte order: ?prefix=&limit=1-1000&cursor= (expired keys left out)", Response: KeyPage{}},
		{Method: G, Path: "/api/memory/{id}/keys/{key...}", Op: OpRead, Handler: h.GetKey,
			Summary: "Read a key: the value's raw bytes (application/octet-stream); metadata in X-Memory-Metadata, expiry in X-Memory-Expires-At; 404 key_not_found"},
		{Method: U, Path: "/api/memory/{id}/keys/{key...}", Op: OpWrite, Handler: h.PutKey, MaxBody: MaxValueBytes,
			Summary:  "Write a key: the body is the value as raw bytes (at most 1 MiB); ?ttlSeconds= expires it, X-Memory-Metadata: <JSON> sets metadata",
			Response: PutAnswer{}},
		{Method: D, Path: "/api/memory/{id}/keys/{key...}", Op: OpWrite, Handler: h.DeleteKey,
			Summary: "Delete a key (deleted false when it was not there)", Response: DeleteAnswer{}},
		{Method: U, Path: "/api/memory/{id}/bulk", Op: OpWrite, Handler: h.BulkPut, MaxBody: MaxBulkBody,
			Summary: "Write up to 100 keys at once, all or none: {entries: [{key, value, base64?, ttlSeconds?, metadata?}]}",
			Request: BulkPutRequest{}, Response: BulkPutAnswer{}},
		{Method: P, Path: "/api/memory/{id}/bulk/get", Op: OpRead, Handler: h.BulkGet,
			Summary: "Read up to 100 keys at once {keys}: each value (text, or base64 with base64 true), metadata and expiry, or null", Request: KeysRequest{}, Response: BulkGetAnswer{}},
		{Method: P, Path: "/api/memory/{id}/bulk/delete", Op: OpWrite, Handler: h.BulkDelete,
			Summary: "Delete up to 100 keys at once {keys}", Request: KeysRequest{}, Response: BulkDeleteAnswer{}},
	}
}
