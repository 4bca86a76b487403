package vectors

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. A collection's project is
// known once it is loaded, so the service checks the permission table
// again with it (a key of another project gets 403). Read-only keys may
// query and read; changes need full access.
func Routes(h Handlers) []api.Route {
	const G, P, D = http.MethodGet, http.MethodPost, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/vectors", Op: auth.OpVectorWrite, ProjectParam: "id", Handler: h.Create, Status: 201,
			Summary: "Create a vector collection {name, dimensions?, metric?, metadataIndexes?}", Request: CreateRequest{}, Response: CollectionAnswer{}},
		{Method: G, Path: "/api/projects/{id}/vectors", Op: auth.OpVectorRead, ProjectParam: "id", Handler: h.List,
			Summary: "A project's vector collections with their vector counts, by name", Response: CollectionList{}},
		{Method: P, Path: "/api/vectors/{id}/upsert", Op: auth.OpVectorWrite, Handler: h.Upsert, Status: 202, MaxBody: MaxUpsertBody,
			Summary: "Upsert up to 1,000 vectors (100 as text); visible to queries when answered", Request: UpsertSchema{}, Response: MutationAnswer{}},
		{Method: P, Path: "/api/vectors/{id}/query", Op: auth.OpVectorRead, Handler: h.Query,
			Summary: "Query by vector or text: topK, filter, namespace, returnMetadata, returnValues", Request: QuerySchema{}, Response: QueryAnswer{}},
		{Method: G, Path: "/api/vectors/{id}", Op: auth.OpVectorRead, Handler: h.Get,
			Summary: "Read a collection and its vector count", Response: CollectionAnswer{}},
		{Method: P, Path: "/api/vectors/{id}", Op: auth.OpVectorWrite, Handler: h.Action,
			Summary: "Delete vectors {action: delete, ids} or index a metadata field {action: index-metadata, propertyName, indexType}", Request: ActionRequest{}, Response: MutationAnswer{}},
		{Method: D, Path: "/api/vectors/{id}", Op: auth.OpVectorWrite, Handler: h.Delete,
			Summary: "Delete a collection for good", Response: api.Deleted{}},
	}
}

// UpsertSchema documents the upsert body for the OpenAPI document (the
// handler reads values with Numbers).
type UpsertSchema struct {
	Vectors []VectorSchema `json:"vectors"`
}

// VectorSchema documents one vector to write: values or text.
type VectorSchema struct {
	ID        string         `json:"id"`
	Values    []float32      `json:"values,omitempty"`
	Text      string         `json:"text,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Namespace string         `json:"namespace,omitempty"`
}

// QuerySchema documents the query body for the OpenAPI document.
type QuerySchema struct {
	Vector         []float32      `json:"vector,omitempty"`
	Text           string         `json:"text,omitempty"`
	TopK           int            `json:"topK,omitempty"`
	Filter         map[string]any `json:"filter,omitempty"`
	Namespace      string         `json:"namespace,omitempty"`
	ReturnMetadata string         `json:"returnMetadata,omitempty"`
	ReturnValues   bool           `json:"returnValues,omitempty"`
}
