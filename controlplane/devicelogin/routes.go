package devicelogin

import (
	"net"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Handlers serve the device login routes.
type Handlers struct{ S *Service }

// Routes is the area's rows of the route table. Asking for a code pair and
// polling need no credentials (the command line has none yet); looking a
// code up and approving it are a member making a key for themselves
// (key.create).
func Routes(h Handlers) []api.Route {
	const G, P = http.MethodGet, http.MethodPost
	return []api.Route{
		{Method: P, Path: "/api/device/code", Public: true, Handler: h.Code, Status: http.StatusCreated, MaxBody: 4 << 10,
			Summary: "Start a device login: a secret device code to poll with and a user code a member approves", Request: CodeRequest{}, Response: CodeAnswer{}},
		{Method: P, Path: "/api/device/token", Public: true, Handler: h.Token, MaxBody: 4 << 10,
			Summary: "Poll a device login: 400 authorization_pending, 429 slow_down, 403 access_denied, 400 expired_token, or the key (once)", Request: TokenRequest{}, Response: TokenAnswer{}},
		{Method: G, Path: "/api/device/requests/{userCode}", Op: auth.OpKeyCreate, Handler: h.Lookup,
			Summary: "What asks with a user code (client name, address, time), before approving it", Response: RequestAnswer{}},
		{Method: P, Path: "/api/device/approve", Op: auth.OpKeyCreate, Handler: h.Approve, MaxBody: 4 << 10,
			Summary: "Approve a user code: a key for you (full or read_only, optionally one project) goes to the waiting command line; deny: true refuses it", Request: ApproveRequest{}, Response: ApproveAnswer{}},
	}
}

// Code answers POST /api/device/code.
func (h Handlers) Code(w http.ResponseWriter, r *http.Request) error {
	var req CodeRequest
	if err := api.Decode(r, &req, true); err != nil {
		return err
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	out, err := h.S.Start(r.Context(), req, ip)
	return api.Reply(w, http.StatusCreated, out, err)
}

// Token answers POST /api/device/token.
func (h Handlers) Token(w http.ResponseWriter, r *http.Request) error {
	var req TokenRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.Poll(r.Context(), req)
	if err == nil {
		w.Header().Set("Cache-Control", "no-store")
	}
	return api.Reply(w, http.StatusOK, out, err)
}

// Lookup answers GET /api/device/requests/{userCode}.
func (h Handlers) Lookup(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.Lookup(r.Context(), r.PathValue("userCode"))
	return api.Reply(w, http.StatusOK, RequestAnswer{Request: out}, err)
}

// Approve answers POST /api/device/approve.
func (h Handlers) Approve(w http.ResponseWriter, r *http.Request) error {
	var req ApproveRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.Approve(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusOK, out, err)
}
