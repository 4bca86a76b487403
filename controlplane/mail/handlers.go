package mail

import (
	"net/http"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// MaxSendBody bounds the body of POST /api/projects/{id}/emails: the
// content limit with room for JSON escaping.
const MaxSendBody = 4 << 20

// Handlers serve the area's routes.
type Handlers struct{ S *Service }

// Send answers POST /api/projects/{id}/emails (202: queued).
func (h Handlers) Send(w http.ResponseWriter, r *http.Request) error {
	var req SendRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	e, err := h.S.SendProject(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), strings.TrimSpace(r.Header.Get("Idempotency-Key")), req)
	return api.Reply(w, http.StatusAccepted, EmailAnswer{Email: e}, err)
}

// List answers GET /api/projects/{id}/emails?state=&limit=&cursor=.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := api.Page(r, DefaultPageSize, MaxPageSize, "cursor")
	if err != nil {
		return err
	}
	p, err := h.S.Emails(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"),
		ListQuery{Limit: limit, Cursor: cursor, State: r.URL.Query().Get("state")})
	return api.Reply(w, http.StatusOK, p, err)
}

// Get answers GET /api/projects/{id}/emails/{emailId}.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	e, err := h.S.Email(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("emailId"))
	return api.Reply(w, http.StatusOK, EmailAnswer{Email: e}, err)
}

// AddDomain answers POST /api/projects/{id}/mail/domains.
func (h Handlers) AddDomain(w http.ResponseWriter, r *http.Request) error {
	var req DomainRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.AddDomain(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, DomainAnswer{Domain: d}, err)
}

// ListDomains answers GET /api/projects/{id}/mail/domains.
func (h Handlers) ListDomains(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.Domains(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, l, err)
}

// GetDomain answers GET /api/mail/domains/{id}.
func (h Handlers) GetDomain(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.GetDomain(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, DomainAnswer{Domain: d}, err)
}

// VerifyDomain answers POST /api/mail/domains/{id}/verify.
func (h Handlers) VerifyDomain(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.VerifyDomain(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, DomainAnswer{Domain: d}, err)
}

// DeleteDomain answers DELETE /api/mail/domains/{id}.
func (h Handlers) DeleteDomain(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := h.S.DeleteDomain(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// ListSuppressions answers GET /api/projects/{id}/email-suppressions.
func (h Handlers) ListSuppressions(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := api.Page(r, DefaultPageSize, MaxPageSize, "cursor")
	if err != nil {
		return err
	}
	p, err := h.S.Suppressions(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), limit, cursor)
	return api.Reply(w, http.StatusOK, p, err)
}

// DeleteSuppression answers DELETE /api/projects/{id}/email-suppressions/{address}.
func (h Handlers) DeleteSuppression(w http.ResponseWriter, r *http.Request) error {
	a := r.PathValue("address")
	err := h.S.Unsuppress(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), a)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: strings.ToLower(a), Deleted: true}, err)
}
