package mcp

import (
	"net/http"
	"net/url"

	"github.com/google/jsonschema-go/jsonschema"
)

// agentTools are the spec's agent management tools (spec: Agents). Each
// calls the agents area's REST route with the caller's key, so its checks
// (tools a run's key could never use, limits, the plan's concurrency) are
// the API's.
func agentTools() []Tool {
	const G, P, A, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	agentPath := func(id string) (string, error) {
		id, err := pathID("agentId", id)
		return "/api/agents/" + id, err
	}
	return []Tool{
		NewTool("list_agent_tools", "List the tools an agent may use",
			"The tool catalogue: each tool with its description and input schema, whether it is available to agents (and why not), and with writes true whether it needs allowWrites. Workspace-wide tools are never given to an agent.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in listAgentToolsIn) (Request, error) {
				q := url.Values{}
				if in.Writes {
					q.Set("writes", "1")
				}
				return Request{Method: G, Path: "/api/agents/tools", Query: q}, nil
			}),
		NewTool("create_agent", "Create an agent",
			"Create an agent in a project: a tool-calling loop on a model of the AI gateway acting on the project's own resources. maxSteps 1-24 (default 8); instructions at most 16,000 characters; tools from list_agent_tools; allowWrites lets runs change data when the starter could. Needs a developer or above.",
			Hints{},
			func(in createAgentIn) (Request, error) {
				id, err := pathID("projectId", in.ProjectID)
				if err != nil {
					return Request{}, err
				}
				body := in
				body.ProjectID = ""
				return Request{Method: P, Path: "/api/projects/" + id + "/agents", Body: body}, nil
			}, minimum("maxSteps", 1), required("projectId")),
		NewTool("get_agent", "Read an agent",
			"An agent with its 20 most recent runs (steps included), its schedule, events and chat settings, and last_error.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in agentIn) (Request, error) {
				p, err := agentPath(in.AgentID)
				return Request{Method: G, Path: p}, err
			}),
		NewTool("update_agent", "Change an agent",
			"Change any of an agent's model, instructions, tools, maxSteps and allowWrites; its run history is kept. Fields left out stay as they are.",
			Hints{Idempotent: true},
			func(in updateAgentIn) (Request, error) {
				p, err := agentPath(in.AgentID)
				body := in
				body.AgentID = ""
				return Request{Method: A, Path: p, Body: body}, err
			}, minimum("maxSteps", 1), required("agentId")),
		NewTool("set_agent_status", "Pause or resume an agent",
			"Pause an agent (runs answer 409; schedule, events and chat start nothing) or resume it.",
			Hints{Idempotent: true},
			func(in agentStatusIn) (Request, error) {
				p, err := agentPath(in.AgentID)
				action := map[string]string{"paused": "pause", "active": "resume"}[in.Status]
				if err == nil && action == "" {
					err = refuse(400, "invalid_request", "status must be active or paused")
				}
				return Request{Method: A, Path: p, Body: map[string]string{"action": action}}, err
			}, func(s *jsonschema.Schema) { s.Properties["status"].Enum = []any{"active", "paused"} }),
		NewTool("delete_agent", "Delete an agent",
			"Remove an agent for good, with its runs, schedule, event secret and chat id; later calls for it answer 404. Runs in progress finish first.",
			Hints{Destructive: true, Idempotent: true},
			func(in agentIn) (Request, error) {
				p, err := agentPath(in.AgentID)
				return Request{Method: D, Path: p}, err
			}),
		NewTool("run_agent", "Run an agent",
			"Start a run with an input (at most 32,000 characters). By default it runs now and answers the finished run with its steps, output, tokens and cost; with background true it is queued (at most 20 waiting per agent). Billed to the workspace's AI credit; 6 runs a minute per workspace.",
			Hints{},
			func(in runAgentIn) (Request, error) {
				p, err := agentPath(in.AgentID)
				return Request{Method: P, Path: p, Body: map[string]any{"input": in.Input, "background": in.Background}}, err
			}),
		NewTool("suggest_agents", "Suggest agents for a project",
			"The agents that kind of app usually needs (appType one of api, blog, saas, static_site, store, video), each with a key to create it by.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in suggestIn) (Request, error) {
				id, err := pathID("projectId", in.ProjectID)
				q := url.Values{}
				if in.AppType != "" {
					q.Set("appType", in.AppType)
				}
				return Request{Method: G, Path: "/api/projects/" + id + "/agents/suggested", Query: q}, err
			}),
		NewTool("create_suggested_agents", "Create suggested agents",
			"Create the chosen suggestions (keys from suggest_agents) in a project.",
			Hints{},
			func(in createSuggestedIn) (Request, error) {
				id, err := pathID("projectId", in.ProjectID)
				return Request{Method: P, Path: "/api/projects/" + id + "/agents/suggested",
					Body: map[string]any{"appType": in.AppType, "keys": in.Keys}}, err
			}),
	}
}

type listAgentToolsIn struct {
	Writes bool `json:"writes,omitempty" jsonschema:"also say which tools need allowWrites"`
}

type createAgentIn struct {
	ProjectID    string   `json:"projectId,omitempty" jsonschema:"the project the agent acts on (prj_...)"`
	Name         string   `json:"name" jsonschema:"the agent's name"`
	Model        string   `json:"model" jsonschema:"a chat model id of the AI gateway, or service-1"`
	Instructions string   `json:"instructions,omitempty" jsonschema:"what the agent does, at most 16,000 characters"`
	Tools        []string `json:"tools,omitempty" jsonschema:"tool names from list_agent_tools"`
	MaxSteps     int      `json:"maxSteps,omitempty" jsonschema:"model calls per run, 1 to 24 (default 8)"`
	AllowWrites  bool     `json:"allowWrites,omitempty" jsonschema:"let runs change data (when the starter could)"`
	Purpose      string   `json:"purpose,omitempty" jsonschema:"one line on why the agent exists"`
}

type agentIn struct {
	AgentID string `json:"agentId" jsonschema:"the agent's id (agt_...)"`
}

type updateAgentIn struct {
	AgentID      string    `json:"agentId,omitempty" jsonschema:"the agent's id (agt_...)"`
	Model        *string   `json:"model,omitempty" jsonschema:"a chat model id of the AI gateway, or service-1"`
	Instructions *string   `json:"instructions,omitempty" jsonschema:"what the agent does, at most 16,000 characters"`
	Tools        *[]string `json:"tools,omitempty" jsonschema:"tool names from list_agent_tools (replaces the list)"`
	MaxSteps     *int      `json:"maxSteps,omitempty" jsonschema:"model calls per run, 1 to 24"`
	AllowWrites  *bool     `json:"allowWrites,omitempty" jsonschema:"let runs change data (when the starter could)"`
}

type agentStatusIn struct {
	AgentID string `json:"agentId" jsonschema:"the agent's id (agt_...)"`
	Status  string `json:"status" jsonschema:"active or paused"`
}

type runAgentIn struct {
	AgentID    string `json:"agentId" jsonschema:"the agent's id (agt_...)"`
	Input      string `json:"input" jsonschema:"what to ask the agent, at most 32,000 characters"`
	Background bool   `json:"background,omitempty" jsonschema:"queue the run instead of waiting for it"`
}

type suggestIn struct {
	ProjectID string `json:"projectId" jsonschema:"the project (prj_...)"`
	AppType   string `json:"appType,omitempty" jsonschema:"the kind of app: api, blog, saas, static_site, store or video"`
}

type createSuggestedIn struct {
	ProjectID string   `json:"projectId" jsonschema:"the project (prj_...)"`
	AppType   string   `json:"appType" jsonschema:"the kind of app the suggestions were for"`
	Keys      []string `json:"keys" jsonschema:"the keys of the suggestions to create"`
}

// required marks a property required that the tool leaves out of the body
// it sends (it goes in the path).
func required(name string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Required = append(s.Required, name) }
}
