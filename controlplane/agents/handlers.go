package agents

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// MaxRunBody bounds a run or chat request body: 32,000 characters of
// input (up to four bytes each) and a chat's history.
const MaxRunBody = 512 << 10

// Handlers serve /api/agents/... and /api/projects/{id}/agents/...
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// ToolList is the answer of GET /api/agents/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
}

// Tools answers GET /api/agents/tools?writes=1.
func (h Handlers) Tools(w http.ResponseWriter, r *http.Request) error {
	writes := r.URL.Query().Get("writes")
	return api.Reply(w, http.StatusOK, ToolList{Tools: Catalogue(writes == "1" || writes == "true")}, nil)
}

// Create answers POST /api/projects/{id}/agents.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, AgentAnswer{Agent: a}, err)
}

// List answers GET /api/projects/{id}/agents.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	list, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, AgentList{Agents: list}, err)
}

// Suggested answers GET /api/projects/{id}/agents/suggested?appType=.
func (h Handlers) Suggested(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.Suggested(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.URL.Query().Get("appType"))
	return api.Reply(w, http.StatusOK, out, err)
}

// CreateSuggested answers POST /api/projects/{id}/agents/suggested.
func (h Handlers) CreateSuggested(w http.ResponseWriter, r *http.Request) error {
	var req SuggestRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	list, err := h.S.CreateSuggested(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, Created{Agents: list}, err)
}

// Run answers POST /api/agents/{id}: 202 with the finished run, or with the
// queued run when background is true.
func (h Handlers) Run(w http.ResponseWriter, r *http.Request) error {
	var req RunRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	x, err := h.S.Run(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusAccepted, RunAnswer{Run: x}, err)
}

// Get answers GET /api/agents/{id}.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	if err == nil {
		d.Events.URL = h.absolute(r, d.Events.URL)
		d.Chat.URL = h.absolute(r, d.Chat.URL)
	}
	return api.Reply(w, http.StatusOK, d, err)
}

// Patch answers PATCH /api/agents/{id}.
func (h Handlers) Patch(w http.ResponseWriter, r *http.Request) error {
	var req PatchRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	ans, err := h.S.Patch(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err == nil && ans.Chat != nil {
		ans.Chat.URL = h.absolute(r, ans.Chat.URL)
	}
	return api.Reply(w, http.StatusOK, ans, err)
}

// Delete answers DELETE /api/agents/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// Inbound answers the two public POSTs under /api/agents/{a}/{b}: a signed
// app event (/api/agents/{id}/events) and a visitor chat message
// (/api/agents/chat/{chatId}). They share one pattern because the two paths
// overlap (/api/agents/chat/events matches both).
func (h Handlers) Inbound(w http.ResponseWriter, r *http.Request) error {
	a, b := r.PathValue("a"), r.PathValue("b")
	switch {
	case a == "chat":
		return h.chat(w, r, b)
	case b == "events":
		return h.event(w, r, a)
	}
	return api.E(api.KindNotFound, "no_route", "no endpoint %s %s", r.Method, r.URL.Path)
}

func (h Handlers) event(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxEventBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return api.E(api.KindTooLarge, "body_too_large", "an event body is at most %d bytes", MaxEventBody).With("limit", MaxEventBody)
		}
		return api.Invalid("reading the event body: %v", err)
	}
	if len(body) > MaxEventBody {
		return api.E(api.KindTooLarge, "body_too_large", "an event body is at most %d bytes", MaxEventBody).With("limit", MaxEventBody)
	}
	ans, err := h.S.Event(r.Context(), id, r.Header.Get(HeaderEvent), r.Header.Get(HeaderDelivery), r.Header.Get(HeaderSignature), body)
	return api.Reply(w, http.StatusAccepted, ans, err)
}

func (h Handlers) chat(w http.ResponseWriter, r *http.Request, chatID string) error {
	origin := r.Header.Get("Origin")
	var m ChatMessage
	if err := api.Decode(r, &m, false); err != nil {
		return err
	}
	reply, err := h.S.Chat(r.Context(), chatID, origin, visitorAddr(r), m)
	if err == nil || !errors.Is(err, errOrigin) {
		cors(w, origin)
	}
	return api.Reply(w, http.StatusOK, reply, err)
}

// Preflight answers OPTIONS /api/agents/chat/{chatId} for browsers.
func (h Handlers) Preflight(w http.ResponseWriter, r *http.Request) error {
	if r.PathValue("a") != "chat" {
		return api.E(api.KindNotFound, "no_route", "no endpoint %s %s", r.Method, r.URL.Path)
	}
	origin := r.Header.Get("Origin")
	if _, err := h.S.ChatOrigin(r.Context(), r.PathValue("b"), origin); err != nil {
		return err
	}
	cors(w, origin)
	w.Header().Set("Access-Control-Allow-Methods", "POST")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func cors(w http.ResponseWriter, origin string) {
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
}

// visitorAddr is the visitor's address without the port.
func visitorAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// absolute prefixes a path with the public base URL, or the request's
// own origin without one.
func (h Handlers) absolute(r *http.Request, path string) string {
	if path == "" || !strings.HasPrefix(path, "/") {
		return path
	}
	if u := h.S.cfg.PublicBaseURL; u != "" {
		return strings.TrimRight(u, "/") + path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}
