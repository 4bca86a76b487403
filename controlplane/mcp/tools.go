package mcp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/svcplatform/platform/controlplane/cdn"
)

// Tools returns the connector's tools of the areas that exist, in the order
// tools/list shows them. Each row names the spec's tool and the REST route
// it calls; adding a tool is adding a row (needs_attention and the agent
// tools join with their areas).
func Tools() []Tool {
	const G, P, U = http.MethodGet, http.MethodPost, http.MethodPut
	return append([]Tool{
		// Repos (spec: Repos).
		NewTool("list_repos", "List repos",
			"List every repo of the workspace with its commit count (repo ids are needed by the other repo tools). Needs a workspace key.",
			Hints{ReadOnly: true, Idempotent: true},
			func(struct{}) (Request, error) { return Request{Method: G, Path: "/api/repos"}, nil }),
		NewTool("create_repo", "Create a repo",
			"Create an empty repo in the workspace. Then push_files to add a commit and deploy_repo to put it live. Names are unique in the workspace. Needs a full-access workspace key (developer or above).",
			Hints{},
			func(in createRepoIn) (Request, error) {
				return Request{Method: P, Path: "/api/repos", Body: in}, nil
			}),
		NewTool("push_files", "Push files as a new commit",
			"Save a new commit in a repo. A commit is a FULL SNAPSHOT: send every file the repo should hold, not only changed ones; files left out are absent from the new commit. "+
				"At most 300 files of about 600 KB each per call, 25 MB in all. Text goes in content as is; binary files as standard base64 with base64 true. "+
				"Environment files (.env and the like) are stored for deploys but never readable back. Answers the new commit's number.",
			Hints{Destructive: true},
			buildPush, pushSchema),
		NewTool("get_repo_files", "Read a repo's files",
			"Without path: the file tree at a commit (default the latest) with each file's size and whether it is readable. "+
				"With path: one text file's content. Text files up to 512 KB are readable one by one; larger and binary files are listed with their size only; environment files are never readable.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in repoFilesIn) (Request, error) {
				id, err := pathID("repoId", in.RepoID)
				if err != nil {
					return Request{}, err
				}
				q := url.Values{}
				if in.Commit > 0 {
					q.Set("commit", strconv.Itoa(in.Commit))
				}
				if in.Path != "" {
					q.Set("path", in.Path)
				}
				return Request{Method: G, Path: "/api/repos/" + id + "/files", Query: q}, nil
			}, minimum("commit", 1)),
		NewTool("deploy_repo", "Deploy a repo commit to a project",
			"Deploy a commit of a repo to a project (default the latest commit); an older commit is a rollback. The deploy runs in the background: the answer is the deployment with its state; the project's live_url serves it once live.",
			Hints{Destructive: true},
			func(in deployIn) (Request, error) {
				id, err := pathID("repoId", in.RepoID)
				if err != nil {
					return Request{}, err
				}
				return Request{Method: P, Path: "/api/repos/" + id + "/deploy", Body: deployBody{ProjectID: in.ProjectID, Commit: in.Commit}}, nil
			}, minimum("commit", 1)),

		// Shield, CDN and security (spec: Shield and security; CDN settings).
		NewTool("get_service_config", "Read a service's settings",
			"Read the saved settings of a workspace service. Service shield: enabled, blockedCountries, denyIps, allowIps, blockAiCrawlers, logOnly, plus protectedSites and passwordsAllowed. "+
				"Service cdn: enabled and cacheTtlSeconds, the cache setting of the workspace's static sites.",
			Hints{ReadOnly: true, Idempotent: true},
			func(in serviceIn) (Request, error) {
				return Request{Method: G, Path: "/api/services/" + url.PathEscape(in.Service)}, nil
			}, serviceEnum),
		NewTool("update_service_config", "Change a service's settings",
			"Change a workspace service's settings: the settings given are merged over the saved ones (a list given replaces the saved list; [] clears it). "+
				"Shield: a save reaches live static sites at once, server apps within about a minute, functions on their next deploy; the answer's appliedNote says so. "+
				"Site passwords (static sites only) are sent on their own as {passwords: {site: password or null}}. "+
				"CDN: enabled (false serves every visit fresh) and cacheTtlSeconds (0 to 31536000); each static site gets the change on its next deploy, as the answer's note says. "+
				"Unknown settings, bad country codes, addresses or cache times are refused and nothing is stored. Needs an admin.",
			Hints{Destructive: true, Idempotent: true},
			func(in updateServiceIn) (Request, error) {
				return Request{Method: U, Path: "/api/services/" + url.PathEscape(in.Service), Body: in.Settings}, nil
			}, serviceEnum, settingsSchema),
		NewTool("security_overview", "Security overview",
			"The workspace's security score and its checks (two-factor, keys, variables, Shield, ...), each with what to do, and audit changes per hour over the last 24 hours.",
			Hints{ReadOnly: true, Idempotent: true},
			func(struct{}) (Request, error) { return Request{Method: G, Path: "/api/security/overview"}, nil }),
		NewTool("needs_attention", "What needs attention",
			"The workspace's ranked to-do list: failed or stuck deploys, functions running older variables, plan limits near their cap, AI credit or the Balance running low, refunds owed, failing webhooks, an unverified e-mail, projects whose deletion failed, Shield left in log-only mode. Each item has a severity, a one-line reason and the API path that fixes it.",
			Hints{ReadOnly: true, Idempotent: true},
			func(struct{}) (Request, error) { return Request{Method: G, Path: "/api/attention"}, nil }),
	}, append(agentTools(), dataTools()...)...)
}

type createRepoIn struct {
	Name        string `json:"name" jsonschema:"the repo's name, unique in the workspace, at most 100 characters"`
	Description string `json:"description,omitempty" jsonschema:"what the repo holds, at most 1000 characters"`
}

type repoFilesIn struct {
	RepoID string `json:"repoId" jsonschema:"the repo's id (repo_...), from list_repos or create_repo"`
	Commit int    `json:"commit,omitempty" jsonschema:"the commit number (1, 2, 3 ...); the latest when omitted"`
	Path   string `json:"path,omitempty" jsonschema:"one file's path in the repo, e.g. src/index.html; omit for the file tree"`
}

type deployIn struct {
	RepoID    string `json:"repoId" jsonschema:"the repo's id (repo_...)"`
	ProjectID string `json:"projectId" jsonschema:"the project to deploy to (prj_...)"`
	Commit    int    `json:"commit,omitempty" jsonschema:"the commit number to deploy; the latest when omitted; an older one is a rollback"`
}

// deployBody is the body of POST /api/repos/{id}/deploy.
type deployBody struct {
	ProjectID string `json:"projectId"`
	Commit    int    `json:"commit,omitempty"`
}

type serviceIn struct {
	Service string `json:"service" jsonschema:"the service: shield or cdn"`
}

type updateServiceIn struct {
	Service  string          `json:"service" jsonschema:"the service: shield or cdn"`
	Settings json.RawMessage `json:"settings"`
}

// services are the services the config tools reach, each at
// /api/services/<name> with that route's own permissions.
var services = []any{"shield", "cdn"}

// serviceEnum limits service to the services the tools reach.
func serviceEnum(s *jsonschema.Schema) { s.Properties["service"].Enum = services }

// minimum sets a lower bound on an integer property.
func minimum(name string, min float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Properties[name].Minimum = &min }
}

// shieldSettings documents Shield's settings for the input schema; the
// settings argument is sent to the API as given (so a list given empty
// clears the saved one).
type shieldSettings struct {
	Enabled          bool              `json:"enabled,omitempty" jsonschema:"turn the rules on or off"`
	BlockedCountries []string          `json:"blockedCountries,omitempty" jsonschema:"two-letter country codes (ISO 3166-1, e.g. RU) whose visitors get 403 Not available in your region; replaces the saved list"`
	DenyIPs          []string          `json:"denyIps,omitempty" jsonschema:"addresses or CIDR ranges always refused with 403 (static sites and functions); replaces the saved list"`
	AllowIPs         []string          `json:"allowIps,omitempty" jsonschema:"addresses or CIDR ranges let through the country rules; replaces the saved list"`
	BlockAICrawlers  bool              `json:"blockAiCrawlers,omitempty" jsonschema:"refuse AI crawlers and assistant fetchers that name themselves in the user agent"`
	LogOnly          bool              `json:"logOnly,omitempty" jsonschema:"count what the rules would block without blocking"`
	Passwords        map[string]string `json:"passwords,omitempty" jsonschema:"static-site passwords by site (project slug): a password sets it, null removes it; send passwords on their own"`
}

// cdnSettings documents the CDN setting for the input schema.
type cdnSettings struct {
	Enabled         bool  `json:"enabled,omitempty" jsonschema:"false stops caching: every visit to the static sites is served fresh"`
	CacheTTLSeconds int64 `json:"cacheTtlSeconds,omitempty" jsonschema:"how long browsers and the edge keep a page: whole seconds from 0 to 31536000 (one year)"`
}

// settingsSchema describes the settings property: Shield's settings
// (shieldSettings) or the CDN's (cdnSettings), whichever the service is.
func settingsSchema(s *jsonschema.Schema) {
	one := 1
	ss, err := jsonschema.For[shieldSettings](nil)
	if err != nil {
		panic("mcp: settings schema: " + err.Error())
	}
	// Lists may be sent empty to clear them, passwords null to remove one.
	for _, name := range []string{"blockedCountries", "denyIps", "allowIps"} {
		p := ss.Properties[name]
		p.Types, p.Type = nil, "array"
	}
	ss.Properties["passwords"].AdditionalProperties = &jsonschema.Schema{Types: []string{"string", "null"}}
	ss.MinProperties = &one
	ss.Title = "shield"
	cs, err := jsonschema.For[cdnSettings](nil)
	if err != nil {
		panic("mcp: settings schema: " + err.Error())
	}
	lo, hi := 0.0, float64(cdn.MaxCacheTTLSeconds)
	cs.Properties["cacheTtlSeconds"].Minimum, cs.Properties["cacheTtlSeconds"].Maximum = &lo, &hi
	cs.MinProperties = &one
	cs.Title = "cdn"
	s.Properties["settings"] = &jsonschema.Schema{
		Description: "the settings to change, merged over the saved ones: Shield's for service shield, the CDN's for service cdn",
		AnyOf:       []*jsonschema.Schema{ss, cs},
	}
}
