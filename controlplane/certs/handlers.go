package certs

import (
	"errors"
	"io"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/certs/certwire"
)

// Handlers serve the certificate endpoints (certwire's paths). They are
// Public in the route table: the cache and host-certificate routes take edge
// tokens, checked here; the CA certificate is public.
type Handlers struct{ S *Service }

// Routes is the area's rows of the route table.
func Routes(h Handlers) []api.Route {
	const G, P, U, D = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	return []api.Route{
		{Method: G, Path: certwire.CachePath + "{key}", Public: true, Handler: h.CacheGet,
			Summary: "An autocert cache value shared by every edge (edge token); 404 when absent"},
		{Method: U, Path: certwire.CachePath + "{key}", Public: true, Handler: h.CachePut, MaxBody: certwire.MaxValueBytes + 1,
			Summary: "Store an autocert cache value, at most 64 KiB (edge token)"},
		{Method: D, Path: certwire.CachePath + "{key}", Public: true, Handler: h.CacheDelete,
			Summary: "Delete an autocert cache value (edge token)", Response: api.Deleted{}},
		{Method: P, Path: certwire.LocalPath, Public: true, Handler: h.Local,
			Summary: "A host certificate signed by the installation CA, for a host the platform serves (edge token)",
			Request: certwire.LocalRequest{}, Response: certwire.LocalCert{}},
		{Method: G, Path: certwire.CAPath, Public: true, Handler: h.CA,
			Summary: "The installation CA's certificate (PEM), for users to trust"},
	}
}

// errToken is the refusal of a missing, unknown or revoked edge token.
var errToken = api.E(api.KindUnauthenticated, "edge_token_invalid", "send a valid edge token: Authorization: Bearer svc_edge_...")

func (h Handlers) auth(w http.ResponseWriter, r *http.Request) error {
	if _, ok := h.S.auth.AuthenticateEdge(r); !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="edge"`)
		return errToken
	}
	return nil
}

// apiErr maps the service's errors to the API's.
func apiErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, certwire.ErrKey):
		return api.E(api.KindInvalid, "invalid_key", "%s", err.Error()).Wrap(err)
	case errors.Is(err, certwire.ErrHost):
		return api.E(api.KindInvalid, "invalid_host", "%s", err.Error()).Wrap(err)
	case errors.Is(err, ErrCacheMiss):
		return api.E(api.KindNotFound, "cache_miss", "no cache value at this key").Wrap(err)
	case errors.Is(err, ErrTooLarge):
		return api.E(api.KindTooLarge, "value_too_large", "a cache value is at most %d bytes", certwire.MaxValueBytes).
			With("limit", certwire.MaxValueBytes).Wrap(err)
	case errors.Is(err, ErrHostNotServed):
		return api.E(api.KindNotFound, "host_not_served", "no site answers at this host").Wrap(err)
	}
	return err
}

// CacheGet answers GET CachePath{key}: the value's bytes, or 404
// cache_miss.
func (h Handlers) CacheGet(w http.ResponseWriter, r *http.Request) error {
	if err := h.auth(w, r); err != nil {
		return err
	}
	v, err := h.S.Get(r.Context(), r.PathValue("key"))
	if err != nil {
		return apiErr(err)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(v)
	return nil
}

// CachePut answers PUT CachePath{key} with the value as the body: 204.
func (h Handlers) CachePut(w http.ResponseWriter, r *http.Request) error {
	if err := h.auth(w, r); err != nil {
		return err
	}
	key := r.PathValue("key")
	if _, err := certwire.ParseKey(key); err != nil {
		return apiErr(err)
	}
	v, err := io.ReadAll(io.LimitReader(r.Body, certwire.MaxValueBytes+1))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || len(v) > certwire.MaxValueBytes {
		return apiErr(ErrTooLarge)
	}
	if err != nil {
		return api.Invalid("reading the body: %v", err)
	}
	if err := h.S.Put(r.Context(), key, v); err != nil {
		return apiErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// CacheDelete answers DELETE CachePath{key}: {id: key, deleted: true},
// whether or not a value was there.
func (h Handlers) CacheDelete(w http.ResponseWriter, r *http.Request) error {
	if err := h.auth(w, r); err != nil {
		return err
	}
	key := r.PathValue("key")
	err := h.S.Delete(r.Context(), key)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: key, Deleted: true}, apiErr(err))
}

// Local answers POST LocalPath {host}: 200 certwire.LocalCert; 404
// host_not_served for a host no site answers at; 400 invalid_host.
func (h Handlers) Local(w http.ResponseWriter, r *http.Request) error {
	if err := h.auth(w, r); err != nil {
		return err
	}
	var req certwire.LocalRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	c, err := h.S.Issue(r.Context(), req.Host)
	if err != nil {
		return apiErr(err)
	}
	w.Header().Set("Cache-Control", "no-store")
	return api.Reply(w, http.StatusOK, c, nil)
}

// CA answers GET CAPath: the installation CA's certificate in PEM.
func (h Handlers) CA(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Header().Set("Content-Disposition", `attachment; filename="platform-ca.pem"`)
	w.Write(h.S.CACertPEM())
	return nil
}
