package signin

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve the management routes (/api/projects/{id}/auth-pools,
// /api/auth-pools/...) and the end-user routes (/api/auth/{pool}/...).
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// MaxEndUserBody bounds an end-user request body (a password is at most
// 1,024 bytes).
const MaxEndUserBody = 16 << 10

// CreatePool answers POST /api/projects/{id}/auth-pools.
func (h Handlers) CreatePool(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, err := h.S.CreatePool(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, PoolAnswer{Pool: p}, err)
}

// ListPools answers GET /api/projects/{id}/auth-pools.
func (h Handlers) ListPools(w http.ResponseWriter, r *http.Request) error {
	list, err := h.S.ListPools(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, PoolList{Pools: list}, err)
}

// GetPool answers GET /api/auth-pools/{id}.
func (h Handlers) GetPool(w http.ResponseWriter, r *http.Request) error {
	p, err := h.S.GetPool(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, PoolAnswer{Pool: p}, err)
}

// UpdatePool answers PATCH /api/auth-pools/{id}.
func (h Handlers) UpdatePool(w http.ResponseWriter, r *http.Request) error {
	var req UpdateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, err := h.S.UpdatePool(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, PoolAnswer{Pool: p}, err)
}

// DeletePool answers DELETE /api/auth-pools/{id}.
func (h Handlers) DeletePool(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := h.S.DeletePool(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// RotateKeys answers POST /api/auth-pools/{id}/keys/rotate.
func (h Handlers) RotateKeys(w http.ResponseWriter, r *http.Request) error {
	var req RotateRequest
	if err := api.Decode(r, &req, true); err != nil {
		return err
	}
	p, err := h.S.RotateKeys(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, PoolAnswer{Pool: p}, err)
}

// ListUsers answers GET /api/auth-pools/{id}/users?limit=&cursor=&email=.
func (h Handlers) ListUsers(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := api.Page(r, DefaultPageSize, MaxPageSize, "cursor")
	if err != nil {
		return err
	}
	page, err := h.S.ListUsers(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), limit, cursor, r.URL.Query().Get("email"))
	if page.Users == nil {
		page.Users = []User{}
	}
	return api.Reply(w, http.StatusOK, page, err)
}

// GetUser answers GET /api/auth-pools/{id}/users/{userId}.
func (h Handlers) GetUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.S.GetUser(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("userId"))
	return api.Reply(w, http.StatusOK, UserAnswer{User: u}, err)
}

// PatchUser answers PATCH /api/auth-pools/{id}/users/{userId}.
func (h Handlers) PatchUser(w http.ResponseWriter, r *http.Request) error {
	var req UserPatch
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	u, err := h.S.PatchUser(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("userId"), req)
	return api.Reply(w, http.StatusOK, UserAnswer{User: u}, err)
}

// DeleteUser answers DELETE /api/auth-pools/{id}/users/{userId}.
func (h Handlers) DeleteUser(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("userId")
	err := h.S.DeleteUser(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// End-user endpoints. Each loads the pool and checks the browser's Origin
// first; only an allowed origin gets the CORS headers, on answers and
// errors alike, so a page elsewhere cannot read anything.

// pool returns the pool of an end-user request whose origin may call it,
// and sets the CORS headers for that origin.
func (h Handlers) pool(w http.ResponseWriter, r *http.Request) (poolRecord, error) {
	origin := r.Header.Get("Origin")
	p, err := h.S.endUserPool(r.Context(), r.PathValue("pool"), origin)
	w.Header().Add("Vary", "Origin")
	if err != nil {
		return p, err
	}
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
	}
	return p, nil
}

// clientAddr is the request's client address without the port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// unauthorized adds the Bearer challenge to a 401 about an access token.
func unauthorized(w http.ResponseWriter, err error) error {
	if errors.Is(err, errAccess) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	}
	return err
}

// SignUp answers POST /api/auth/{pool}/signup.
func (h Handlers) SignUp(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req Credentials
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.signUp(r.Context(), p, clientAddr(r), req)
	return api.Reply(w, http.StatusCreated, out, err)
}

// SignIn answers POST /api/auth/{pool}/signin.
func (h Handlers) SignIn(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req Credentials
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.signIn(r.Context(), p, clientAddr(r), req)
	return api.Reply(w, http.StatusOK, out, err)
}

// Refresh answers POST /api/auth/{pool}/token/refresh.
func (h Handlers) Refresh(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req RefreshRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.refresh(r.Context(), p, req)
	return api.Reply(w, http.StatusOK, out, err)
}

// SignOut answers POST /api/auth/{pool}/signout.
func (h Handlers) SignOut(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req SignOutRequest
	if err := api.Decode(r, &req, true); err != nil {
		return err
	}
	out, err := h.S.signOut(r.Context(), p, bearer(r.Header.Get("Authorization")), req)
	return api.Reply(w, http.StatusOK, out, unauthorized(w, err))
}

// User answers GET /api/auth/{pool}/user.
func (h Handlers) User(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	u, err := h.S.currentUser(r.Context(), p, bearer(r.Header.Get("Authorization")))
	return api.Reply(w, http.StatusOK, UserAnswer{User: u}, unauthorized(w, err))
}

// Verify answers POST /api/auth/{pool}/verify.
func (h Handlers) Verify(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req TokenRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	u, err := h.S.verifyEmail(r.Context(), p, req)
	return api.Reply(w, http.StatusOK, UserAnswer{User: u}, err)
}

// SendVerification answers POST /api/auth/{pool}/verify/send.
func (h Handlers) SendVerification(w http.ResponseWriter, r *http.Request) error {
	return h.mail(w, r, mailVerify)
}

// Recover answers POST /api/auth/{pool}/recover.
func (h Handlers) Recover(w http.ResponseWriter, r *http.Request) error {
	return h.mail(w, r, mailReset)
}

func (h Handlers) mail(w http.ResponseWriter, r *http.Request, kind string) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req EmailRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.requestMail(r.Context(), p, clientAddr(r), kind, req)
	return api.Reply(w, http.StatusAccepted, out, err)
}

// ResetPassword answers POST /api/auth/{pool}/recover/confirm.
func (h Handlers) ResetPassword(w http.ResponseWriter, r *http.Request) error {
	p, err := h.pool(w, r)
	if err != nil {
		return err
	}
	var req ResetRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	u, err := h.S.resetPassword(r.Context(), p, req)
	return api.Reply(w, http.StatusOK, UserAnswer{User: u}, err)
}

// JWKS answers GET /api/auth/{pool}/.well-known/jwks.json: public keys,
// readable from any origin and cacheable for JWKSMaxAge.
func (h Handlers) JWKS(w http.ResponseWriter, r *http.Request) error {
	keys, err := h.S.JWKS(r.Context(), r.PathValue("pool"))
	if err != nil {
		return err
	}
	body, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Write(append(body, '\n'))
	return nil
}

// preflightMethods are what end-user endpoints accept.
var preflightMethods = map[string]bool{http.MethodGet: true, http.MethodPost: true}

// Preflight answers OPTIONS /api/auth/{pool}/{path...}: a browser asking
// whether a page of origin may call the pool. Only the pool's effective
// origins get the CORS headers; anything else is 403.
func (h Handlers) Preflight(w http.ResponseWriter, r *http.Request) error {
	origin := r.Header.Get("Origin")
	w.Header().Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
	if origin == "" {
		return api.Invalid("a preflight request carries an Origin header")
	}
	if _, err := h.S.endUserPool(r.Context(), r.PathValue("pool"), origin); err != nil {
		return err
	}
	if m := r.Header.Get("Access-Control-Request-Method"); !preflightMethods[m] {
		return api.E(api.KindMethodNotAllowed, "method_not_allowed", "the end-user endpoints take GET and POST, not %q", m)
	}
	for _, hd := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		switch strings.ToLower(strings.TrimSpace(hd)) {
		case "", "authorization", "content-type":
		default:
			return api.Forbidden("header_not_allowed", "the end-user endpoints accept the headers Authorization and Content-Type, not %q", strings.TrimSpace(hd))
		}
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Allow-Methods", "GET, POST")
	hdr.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
