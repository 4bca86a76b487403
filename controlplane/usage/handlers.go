package usage

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve the usage report and the attention list.
type Handlers struct{ S *Service }

// Usage answers GET /api/usage?period=&project=.
func (h Handlers) Usage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for _, name := range []string{"period", "project"} {
		if len(q[name]) > 1 {
			return api.Invalid("%s may be given once", name)
		}
	}
	rep, err := h.S.Report(r.Context(), api.PrincipalFrom(r.Context()), Query{Period: q.Get("period"), Project: q.Get("project")})
	return api.Reply(w, http.StatusOK, rep, err)
}

// Attention answers GET /api/attention: the ranked to-do list.
func (h Handlers) Attention(w http.ResponseWriter, r *http.Request) error {
	a, err := h.S.Attention(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, a, err)
}
