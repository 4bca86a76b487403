package vectors

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// CollectionList is the answer of GET /api/projects/{id}/vectors.
type CollectionList struct {
	// Collections are the project's collections by name, each with its
	// vector count (at most the plan's VectorCollections).
	Collections []Collection `json:"collections"`
}

// List returns a project's collections with their vector counts.
func (s *Service) List(ctx context.Context, p *auth.Principal, projectID string) (CollectionList, error) {
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return CollectionList{}, err
	}
	if err := auth.Authorize(p, auth.OpVectorRead, projectID); err != nil {
		return CollectionList{}, err
	}
	recs, err := s.records.inProject(ctx, projectID)
	if err != nil {
		return CollectionList{}, api.Internal(err)
	}
	out := CollectionList{Collections: make([]Collection, 0, len(recs))}
	for _, rec := range recs {
		c, err := s.open(ctx, rec)
		if err != nil {
			return CollectionList{}, api.Internal(err)
		}
		out.Collections = append(out.Collections, collectionOf(c.rec, c.indexDefs(), c.count()))
	}
	slices.SortFunc(out.Collections, func(a, b Collection) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// List answers GET /api/projects/{id}/vectors.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, out, err)
}
