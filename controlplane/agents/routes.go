package agents

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. An agent's project is known
// once it is loaded, so the service checks the permission table again with
// it (a key limited to another project gets 403). The event and chat
// endpoints are public: a signature or a chat id and origin authenticate them.
func Routes(h Handlers) []api.Route {
	const G, P, A, D, O = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodOptions
	return []api.Route{
		{Method: G, Path: "/api/agents/tools", Op: auth.OpAgentRead, Handler: h.Tools,
			Summary: "The tool catalogue (?writes=1 adds needsWrites and writesReason)", Response: ToolList{}},
		{Method: P, Path: "/api/projects/{id}/agents", Op: auth.OpAgentWrite, ProjectParam: "id", Handler: h.Create, Status: 201,
			Summary: "Create an agent {name, model, instructions?, tools?, maxSteps?, allowWrites?, trigger?, purpose?}", Request: CreateRequest{}, Response: AgentAnswer{}},
		{Method: G, Path: "/api/projects/{id}/agents", Op: auth.OpAgentRead, ProjectParam: "id", Handler: h.List,
			Summary: "List a project's agents", Response: AgentList{}},
		{Method: G, Path: "/api/projects/{id}/agents/suggested", Op: auth.OpAgentRead, ProjectParam: "id", Handler: h.Suggested,
			Summary: "Agents a kind of app usually needs (?appType=)", Response: Suggestions{}},
		{Method: P, Path: "/api/projects/{id}/agents/suggested", Op: auth.OpAgentWrite, ProjectParam: "id", Handler: h.CreateSuggested, Status: 201,
			Summary: "Create the chosen suggestions {appType, keys}", Request: SuggestRequest{}, Response: Created{}},
		{Method: P, Path: "/api/agents/{id}", Op: auth.OpAgentRun, Handler: h.Run, Status: 202, MaxBody: MaxRunBody,
			Summary: "Run an agent {input, background?}: 202 with the finished run, or the queued run", Request: RunRequest{}, Response: RunAnswer{}},
		{Method: G, Path: "/api/agents/{id}", Op: auth.OpAgentRead, Handler: h.Get,
			Summary: "An agent, its 20 most recent runs with steps, schedule, events and chat", Response: AgentDetail{}},
		{Method: A, Path: "/api/agents/{id}", Op: auth.OpAgentWrite, Handler: h.Patch,
			Summary: "Change an agent, pause/resume it, or set its schedule, events or chat", Request: PatchRequest{}, Response: AgentAnswer{}},
		{Method: D, Path: "/api/agents/{id}", Op: auth.OpAgentWrite, Handler: h.Delete,
			Summary: "Remove an agent and its runs", Response: api.Deleted{}},
		{Method: P, Path: "/api/agents/{a}/{b}", Public: true, Handler: h.Inbound, Status: 202, MaxBody: MaxRunBody,
			Summary: "Signed app event (/api/agents/{id}/events, 16 KB, 202) or visitor chat message (/api/agents/chat/{chatId}: {message, history?} -> {reply, run_id})",
			Request: ChatMessage{}, Response: ChatReply{}},
		{Method: O, Path: "/api/agents/{a}/{b}", Public: true, Handler: h.Preflight, Status: 204,
			Summary: "CORS preflight of the visitor chat endpoint"},
	}
}
