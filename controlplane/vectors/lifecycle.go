package vectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/vectors/filter"
)

// Limits of collections (the specification's, and Vectorize's where the
// specification is silent).
const (
	// DefaultDimensions is a collection's dimensions when none are given.
	DefaultDimensions = 768
	// MaxNameLen bounds a collection name.
	MaxNameLen = 64
	// MaxMetadataIndexes bounds the metadata indexes of a collection.
	MaxMetadataIndexes = 10
)

// AllowedDimensions are the dimension counts a collection may have.
var AllowedDimensions = []int{384, 768, 1024, 1536}

// Collection is a collection as the API shows it.
type Collection struct {
	// ID names the collection in paths.
	ID string `json:"id"`
	// Name is unique within the project.
	Name string `json:"name"`
	// ProjectID is the project the collection belongs to.
	ProjectID string `json:"projectId"`
	// Dimensions is the length of every vector.
	Dimensions int `json:"dimensions"`
	// Metric is cosine, euclidean or dot-product.
	Metric string `json:"metric"`
	// MetadataIndexes are the filterable fields.
	MetadataIndexes []MetadataIndex `json:"metadataIndexes"`
	// VectorCount is the number of vectors stored (on reads).
	VectorCount int `json:"vectorCount"`
	// CreatedAt is when the collection was created.
	CreatedAt time.Time `json:"createdAt"`
}

// MetadataIndex makes a metadata field filterable.
type MetadataIndex struct {
	// PropertyName is the field (dots reach nested fields).
	PropertyName string `json:"propertyName"`
	// IndexType is string, number or boolean.
	IndexType string `json:"indexType"`
}

// CollectionAnswer wraps one collection.
type CollectionAnswer struct {
	Collection Collection `json:"collection"`
	// VectorCount repeats collection.vectorCount on reads.
	VectorCount *int `json:"vectorCount,omitempty"`
}

// CreateRequest is the body of POST /api/projects/{id}/vectors.
type CreateRequest struct {
	Name            string          `json:"name"`
	Dimensions      *int            `json:"dimensions,omitempty"`
	Metric          string          `json:"metric,omitempty"`
	MetadataIndexes []MetadataIndex `json:"metadataIndexes,omitempty"`
}

// ActionRequest is the body of POST /api/vectors/{id}: {action: delete,
// ids} or {action: index-metadata, propertyName, indexType}.
type ActionRequest struct {
	Action       string   `json:"action"`
	IDs          []string `json:"ids,omitempty"`
	PropertyName string   `json:"propertyName,omitempty"`
	IndexType    string   `json:"indexType,omitempty"`
}

func invalid(code, format string, args ...any) *api.Error {
	return api.E(api.KindInvalid, code, format, args...)
}

func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", invalid("", "name is required")
	case len(name) > MaxNameLen:
		return "", invalid("", "name is at most %d characters", MaxNameLen)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", invalid("", "name cannot hold control characters")
	}
	return name, nil
}

func validDimensions(d *int) (int, error) {
	if d == nil {
		return DefaultDimensions, nil
	}
	for _, a := range AllowedDimensions {
		if *d == a {
			return a, nil
		}
	}
	if *d > 1536 {
		return 0, invalid("dimensions_too_large", "dimensions %d is larger than the largest allowed, 1536: use 384, 768, 1024 or 1536", *d)
	}
	return 0, invalid("invalid_dimensions", "dimensions must be 384, 768 (the default), 1024 or 1536, not %d", *d)
}

func validMetric(m string) (string, error) {
	switch m {
	case "":
		return "cosine", nil
	case "cosine", "euclidean", "dot-product":
		return m, nil
	}
	return "", invalid("invalid_metric", "metric must be cosine (the default), euclidean or dot-product, not %q", m)
}

// splitPath splits a dotted property name.
func splitPath(p string) []string { return strings.Split(p, ".") }

// validIndex checks a metadata index definition.
func validIndex(mi MetadataIndex) (indexDef, error) {
	p := mi.PropertyName
	switch {
	case p == "":
		return indexDef{}, invalid("", "propertyName is required")
	case len(p) > filter.MaxKeyLen:
		return indexDef{}, invalid("", "propertyName is at most %d characters", filter.MaxKeyLen)
	case strings.HasPrefix(p, "$") || strings.Contains(p, `"`):
		return indexDef{}, invalid("", "propertyName %q cannot start with $ or contain a double quote", p)
	}
	parts := splitPath(p)
	if len(parts) > filter.MaxDepth {
		return indexDef{}, invalid("", "propertyName %q is nested too deep: at most %d dotted levels", p, filter.MaxDepth)
	}
	for _, s := range parts {
		if s == "" {
			return indexDef{}, invalid("", "propertyName %q has an empty segment", p)
		}
	}
	k, ok := indexTypes[mi.IndexType]
	if !ok {
		return indexDef{}, invalid("invalid_index_type", "indexType must be string, number or boolean, not %q", mi.IndexType)
	}
	return indexDef{Property: p, Type: k}, nil
}

// collectionOf renders a record with its indexes.
func collectionOf(rec record, defs []indexDef, count int) Collection {
	c := Collection{ID: rec.ID, Name: rec.Name, ProjectID: rec.Project, Dimensions: rec.Dims, Metric: rec.Metric,
		MetadataIndexes: []MetadataIndex{}, VectorCount: count, CreatedAt: rec.CreatedAt}
	for _, d := range defs {
		c.MetadataIndexes = append(c.MetadataIndexes, MetadataIndex{PropertyName: d.Property, IndexType: typeName(d.Type)})
	}
	return c
}

// Create makes a collection in a project: its file first (with its
// metadata indexes), then its record in the plan's count; a refused record
// removes the file, so nothing is half-made.
func (s *Service) Create(ctx context.Context, p *auth.Principal, projectID string, req CreateRequest) (Collection, error) {
	name, err := validName(req.Name)
	if err != nil {
		return Collection{}, err
	}
	dims, err := validDimensions(req.Dimensions)
	if err != nil {
		return Collection{}, err
	}
	metric, err := validMetric(req.Metric)
	if err != nil {
		return Collection{}, err
	}
	if len(req.MetadataIndexes) > MaxMetadataIndexes {
		return Collection{}, invalid("too_many_indexes", "a collection has at most %d metadata indexes", MaxMetadataIndexes)
	}
	var defs []indexDef
	seen := map[string]bool{}
	for _, mi := range req.MetadataIndexes {
		d, err := validIndex(mi)
		if err != nil {
			return Collection{}, err
		}
		if seen[d.Property] {
			return Collection{}, invalid("", "metadataIndexes names %q twice", d.Property)
		}
		seen[d.Property] = true
		defs = append(defs, d)
	}
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return Collection{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, projectID); err != nil {
		return Collection{}, err
	}
	rec := record{ID: store.NewID("vec"), Workspace: p.WorkspaceID, Project: projectID, Name: name, Dims: dims, Metric: metric,
		Status: statusReady, CreatedAt: s.d.Clock.Now()}
	path := s.path(rec.ID)
	f, err := openFile(ctx, path, true)
	if err == nil {
		err = f.init(ctx, dims, metric, defs)
		f.close()
	}
	if err != nil {
		removeFiles(path)
		return Collection{}, api.Internal(fmt.Errorf("vectors: create file: %w", err))
	}
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	limit := collectionLimit(plan)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		n, err := s.records.countLive(ctx, tx, p.WorkspaceID)
		if err != nil {
			return err
		}
		if !plans.Allows(limit, n+1) {
			return plans.LimitError(plan, collectionLimit, n, n+1,
				"the %s plan holds %d vector collection(s) and the workspace has %d: delete one or move to a larger plan", plan, limit, n)
		}
		if err := s.records.insert(ctx, tx, rec); err != nil {
			if store.IsUniqueViolation(err) {
				return api.Conflict("name_taken", "this project already has a vector collection named %q", name)
			}
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "vectors.create", Category: audit.CategoryData,
			TargetType: "vector_collection", TargetID: rec.ID, ProjectID: projectID,
			Summary: fmt.Sprintf("created vector collection %s (%d dimensions, %s)", name, dims, metric)})
	})
	if err != nil {
		removeFiles(path)
		return Collection{}, err
	}
	return collectionOf(rec, defs, 0), nil
}

// collectionLimit is how many vector collections a plan holds.
func collectionLimit(p plans.Name) int { return plans.Of(p).VectorCollections }

// load returns the record and loaded collection id for a caller allowed op
// on it: 404 for none or another workspace's, 410 for a deleted one, 403
// for a key of another project.
func (s *Service) load(ctx context.Context, p *auth.Principal, id string, op auth.Op) (*coll, error) {
	rec, err := s.records.byID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && rec.Workspace != p.WorkspaceID {
		return nil, api.NotFound("vector collection " + id)
	}
	if err != nil {
		return nil, err
	}
	if err := auth.Authorize(p, op, rec.Project); err != nil {
		return nil, err
	}
	if rec.Status == statusDeleted {
		return nil, api.E(api.KindGone, "collection_deleted", "vector collection %s was deleted", id)
	}
	c, err := s.open(ctx, rec)
	if err != nil {
		return nil, api.Internal(err)
	}
	return c, nil
}

// Get returns a collection with its vector count.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (Collection, error) {
	c, err := s.load(ctx, p, id, auth.OpVectorRead)
	if err != nil {
		return Collection{}, err
	}
	return collectionOf(c.rec, c.indexDefs(), c.count()), nil
}

// IndexMetadata makes a metadata field filterable for vectors written from
// now on.
func (s *Service) IndexMetadata(ctx context.Context, p *auth.Principal, id string, mi MetadataIndex) (Collection, error) {
	d, err := validIndex(mi)
	if err != nil {
		return Collection{}, err
	}
	c, err := s.load(ctx, p, id, auth.OpVectorWrite)
	if err != nil {
		return Collection{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, c.rec.Project); err != nil {
		return Collection{}, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return Collection{}, api.E(api.KindGone, "collection_deleted", "vector collection %s was deleted", id)
	}
	c.mu.RLock()
	exists, n := c.column(d.Property) != nil, len(c.cols)
	c.mu.RUnlock()
	if exists {
		return Collection{}, api.Conflict("index_exists", "%q is indexed already", d.Property)
	}
	if n >= MaxMetadataIndexes {
		return Collection{}, invalid("too_many_indexes", "a collection has at most %d metadata indexes", MaxMetadataIndexes)
	}
	def, err := c.f.addIndex(ctx, d.Property, d.Type)
	if err != nil {
		return Collection{}, api.Internal(err)
	}
	c.mu.Lock()
	c.addColumn(def)
	c.seq = def.Since
	c.mu.Unlock()
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "vectors.index_metadata", Category: audit.CategorySettings,
			TargetType: "vector_collection", TargetID: id, ProjectID: c.rec.Project,
			Summary: fmt.Sprintf("indexed metadata field %s (%s) of vector collection %s", d.Property, typeName(d.Type), c.rec.Name)})
	})
	if err != nil {
		s.d.Logger.Warn("vectors: audit index-metadata", "collection", id, "err", err)
	}
	s.usage.Add(c.rec.Workspace, c.rec.Project, MetricOperations, 1, s.d.Clock.Now())
	return collectionOf(c.rec, c.indexDefs(), c.count()), nil
}

// Delete removes a collection for good.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	c, err := s.load(ctx, p, id, auth.OpVectorWrite)
	if err != nil {
		return err
	}
	return s.remove(ctx, p, c.rec, fmt.Sprintf("deleted vector collection %s", c.rec.Name))
}

// remove tombstones the record, then drops the collection from memory and
// disk; files a failure leaves are swept at the next start.
func (s *Service) remove(ctx context.Context, p *auth.Principal, rec record, summary string) error {
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := s.records.markDeleted(ctx, tx, rec.ID, s.d.Clock.Now()); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: rec.Workspace, Actor: p, Action: "vectors.delete", Category: audit.CategoryData,
			TargetType: "vector_collection", TargetID: rec.ID, ProjectID: rec.Project, Summary: summary})
	})
	if err != nil {
		return err
	}
	s.forget(rec.ID)
	if err := removeFiles(s.path(rec.ID)); err != nil {
		s.d.Logger.Warn("vectors: remove files", "collection", rec.ID, "err", err)
	}
	return nil
}

// Name names the area's resources in project teardown messages.
func (s *Service) Name() string { return "vector collections" }

// Blockers lists nothing: collections never stop a project's deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove deletes every collection of a deleted project; safe to call again.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	recs, err := s.records.inProject(ctx, projectID)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		errs = append(errs, s.remove(ctx, nil, r, fmt.Sprintf("deleted vector collection %s with its project", r.Name)))
	}
	return errors.Join(errs...)
}

// Service is the key of the project read's services object.
func (s *Service) Service() string { return "vectors" }

// Count is the number of vector collections of a project.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	recs, err := s.records.inProject(ctx, projectID)
	return len(recs), err
}
