package ai

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes lists every route of the AI gateway. Calls need auth.OpAIUse
// (developers and above, full-access workspace keys); listings need
// auth.OpAIRead. Both are workspace-wide: project keys are refused.
func Routes(h Handlers) []api.Route {
	const G, P, U = http.MethodGet, http.MethodPost, http.MethodPut
	return []api.Route{
		{Method: P, Path: "/api/ai/chat", Op: auth.OpAIUse, Handler: h.Chat, MaxBody: MaxChatBody, Summary: "Chat with a model or service-1; server-sent events (meta, delta, done, error) when stream is true", Request: ChatRequest{}, Response: Answer{}},
		{Method: G, Path: "/api/ai/chat", Op: auth.OpAIRead, Handler: h.List, Summary: "Models this workspace can use (with enabled and price) and its AI limits and credit", Response: ChatListing{}},
		{Method: P, Path: "/api/ai/playground", Op: auth.OpAIUse, Handler: h.Playground, MaxBody: MaxChatBody, Summary: "One-shot alias of chat: {model, prompt}", Request: ChatRequest{}, Response: Answer{}},
		{Method: P, Path: "/api/ai/embeddings", Op: auth.OpAIUse, Handler: h.Embeddings, MaxBody: MaxChatBody, Summary: "Embed up to 100 inputs (bge-small 384, bge-base 768, bge-large 1024)", Request: EmbeddingsRequest{}, Response: EmbedAnswer{}},
		{Method: G, Path: "/api/ai/requests", Op: auth.OpAIRead, Handler: h.Requests, Summary: "Recent AI calls (30 days; never prompts or answers) and this month's spend by model and project", Response: RequestsPage{}},
		{Method: G, Path: "/api/ai/settings", Op: auth.OpAIRead, Handler: h.GetSettings, Summary: "The workspace's AI switches: the gateway and each model", Response: SettingsView{}},
		{Method: U, Path: "/api/ai/settings", Op: auth.OpAIUse, Handler: h.PutSettings, Summary: "Switch the gateway or models on or off (admins)", Request: SettingsRequest{}, Response: SettingsView{}},

		// The chat-completions-compatible surface (base path /api/ai/v1).
		{Method: P, Path: "/api/ai/v1/chat/completions", Op: auth.OpAIUse, Handler: h.Completions, Errors: h.compatError, MaxBody: MaxChatBody, Summary: "Chat-completions-compatible chat (streaming included), plus field service", Request: CompletionRequest{}, Response: Completion{}},
		{Method: G, Path: "/api/ai/v1/models", Op: auth.OpAIRead, Handler: h.Models, Errors: h.compatError, Summary: "Chat-completions-compatible model list", Response: ModelList{}},
		{Method: P, Path: "/api/ai/v1/embeddings", Op: auth.OpAIUse, Handler: h.CompatEmbeddings, Errors: h.compatError, MaxBody: MaxChatBody, Summary: "Chat-completions-compatible embeddings", Request: CompatEmbeddingsRequest{}},
	}
}
