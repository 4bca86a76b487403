package ai

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// MaxChatBody bounds a chat request body: 200,000 characters of up to four
// bytes each, JSON escaping and the rest of the request.
const MaxChatBody = 4 << 20

// Handlers serve the AI gateway's routes.
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// Chat answers POST /api/ai/chat: the answer, or server-sent events when
// stream is true.
func (h Handlers) Chat(w http.ResponseWriter, r *http.Request) error {
	return h.chat(w, r, SurfaceChat)
}

// Playground answers POST /api/ai/playground, a one-shot alias of chat.
func (h Handlers) Playground(w http.ResponseWriter, r *http.Request) error {
	return h.chat(w, r, SurfacePlayground)
}

func (h Handlers) chat(w http.ResponseWriter, r *http.Request, surface string) error {
	arrived := time.Now()
	var req ChatRequest
	if err := decodeChat(r, &req); err != nil {
		return err
	}
	in, err := req.input(r.Header.Get("X-Service-Project"), surface)
	if err != nil {
		return err
	}
	ctx, p := r.Context(), api.PrincipalFrom(r.Context())
	if !req.Stream {
		ans, err := h.S.Chat(ctx, p, in, nil)
		if err != nil {
			if ctx.Err() != nil && !isAPIError(err) {
				return nil // the client is gone; nothing to answer
			}
			return err
		}
		setGatewayTime(w, arrived, ans.upstream)
		writeAnswer(w, ans)
		return nil
	}
	sink := newNativeSink(w)
	sink.arrived = arrived
	ans, err := h.S.Chat(ctx, p, in, sink)
	switch {
	case !sink.started:
		if err == nil || (ctx.Err() != nil && !isAPIError(err)) {
			return nil
		}
		return err
	case err != nil:
		if ctx.Err() == nil && isAPIError(err) {
			sink.fail(err, ans)
		}
		return nil
	}
	sink.done(ans)
	return nil
}

func isAPIError(err error) bool {
	var e *api.Error
	return errors.As(err, &e)
}

// List answers GET /api/ai/chat: models with enabled and price, and limits.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, out, err)
}

// Embeddings answers POST /api/ai/embeddings.
func (h Handlers) Embeddings(w http.ResponseWriter, r *http.Request) error {
	var req EmbeddingsRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	project, err := projectOf(req.ProjectID, r.Header.Get("X-Service-Project"))
	if err != nil {
		return err
	}
	out, err := h.S.Embed(r.Context(), api.PrincipalFrom(r.Context()), EmbedInput{Input: req.Input, Model: strings.TrimSpace(req.Model), Project: project})
	return api.Reply(w, http.StatusOK, out, err)
}

// Requests answers GET /api/ai/requests?limit=&projectId=.
func (h Handlers) Requests(w http.ResponseWriter, r *http.Request) error {
	limit, _, err := api.Page(r, 50, 500, "cursor")
	if err != nil {
		return err
	}
	project, err := projectOf(r.URL.Query().Get("projectId"), r.Header.Get("X-Service-Project"))
	if err != nil {
		return err
	}
	out, err := h.S.Requests(r.Context(), api.PrincipalFrom(r.Context()), project, limit)
	return api.Reply(w, http.StatusOK, out, err)
}

// GetSettings answers GET /api/ai/settings.
func (h Handlers) GetSettings(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.GetSettings(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, out, err)
}

// PutSettings answers PUT /api/ai/settings (admins).
func (h Handlers) PutSettings(w http.ResponseWriter, r *http.Request) error {
	var req SettingsRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.UpdateSettings(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusOK, out, err)
}
