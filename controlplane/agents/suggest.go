package agents

import (
	"context"
	"database/sql"
	"sort"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Suggestion is an agent a kind of app usually needs.
type Suggestion struct {
	Key          string   `json:"key"`
	Name         string   `json:"name"`
	Purpose      string   `json:"purpose"`
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	AllowWrites  bool     `json:"allowWrites"`
	Trigger      Trigger  `json:"trigger"`
}

// Suggestions is the answer of GET /api/projects/{id}/agents/suggested.
type Suggestions struct {
	AppType     string       `json:"appType"`
	Suggestions []Suggestion `json:"suggestions"`
}

// SuggestRequest is the body of POST /api/projects/{id}/agents/suggested.
type SuggestRequest struct {
	AppType string   `json:"appType"`
	Keys    []string `json:"keys"`
}

// Created is the answer of creating suggestions.
type Created struct {
	Agents []Agent `json:"agents"`
}

var (
	siteHealth = Suggestion{Key: "deploy-watch", Name: "Deploy watcher", Purpose: "Explains failed deploys",
		Instructions: "Check the project's latest deployments. If the latest failed, explain why from its log summary and what to change. Answer briefly.",
		Tools:        []string{"project_info", "deploy_status"}, Trigger: Trigger{Kind: "schedule", Label: "Every morning"}}
	supportChat = Suggestion{Key: "support-chat", Name: "Support chat", Purpose: "Answers visitors from the project's knowledge base",
		Instructions: "Answer visitors' questions using only what vector_query finds in the project's knowledge base collection. If nothing relevant is found, say you do not know.",
		Tools:        []string{"vector_query"}, Trigger: Trigger{Kind: "chat", Label: "Visitor chat"}}
	salesReport = Suggestion{Key: "sales-report", Name: "Sales report", Purpose: "Summarises payments",
		Instructions: "Summarise the project's payments of the last day: count, total, refunds and disputes, and anything unusual.",
		Tools:        []string{"payments_overview", "payments_list"}, Trigger: Trigger{Kind: "schedule", Label: "Every day"}}
	orderFollowUp = Suggestion{Key: "order-follow-up", Name: "Order follow-up", Purpose: "Records paid orders sent by the app",
		Instructions: "For each payment event, look up whether the checkout was paid and record the order in the orders table of the project's database.",
		Tools:        []string{"payment_lookup", "database_query", "database_execute"}, AllowWrites: true, Trigger: Trigger{Kind: "event", Label: "payment events"}}
	dataAnalyst = Suggestion{Key: "data-analyst", Name: "Data analyst", Purpose: "Answers questions about the app's data",
		Instructions: "Answer questions about the project's data with read-only SQL; show the query you used.",
		Tools:        []string{"database_query"}, AllowWrites: true, Trigger: Trigger{Kind: "manual", Label: "On demand"}}
	indexer = Suggestion{Key: "content-indexer", Name: "Content indexer", Purpose: "Keeps the search collection up to date",
		Instructions: "When content changes, upsert its text into the project's vector collection with its URL as metadata.",
		Tools:        []string{"vector_upsert", "vector_query"}, AllowWrites: true, Trigger: Trigger{Kind: "event", Label: "content.updated"}}
	mediaWatch = Suggestion{Key: "media-watch", Name: "Media watcher", Purpose: "Reports videos stuck in processing",
		Instructions: "List the project's videos and report any not ready, with how long they have been waiting.",
		Tools:        []string{"media_list", "media_status"}, Trigger: Trigger{Kind: "schedule", Label: "Every hour"}}
)

// suggestions maps an app type to the agents it usually needs.
var suggestions = map[string][]Suggestion{
	"static_site": {siteHealth, supportChat},
	"blog":        {siteHealth, supportChat, indexer},
	"store":       {salesReport, orderFollowUp, supportChat, siteHealth},
	"saas":        {dataAnalyst, supportChat, siteHealth, salesReport},
	"api":         {dataAnalyst, siteHealth},
	"video":       {mediaWatch, supportChat, siteHealth},
}

func appTypes() []string {
	out := make([]string, 0, len(suggestions))
	for k := range suggestions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func suggestionsFor(appType string) ([]Suggestion, error) {
	list, ok := suggestions[strings.ToLower(strings.TrimSpace(appType))]
	if !ok {
		return nil, api.Invalid("appType must be one of %s", strings.Join(appTypes(), ", ")).With("field", "appType")
	}
	return list, nil
}

// Suggested lists the agents an app type usually needs.
func (s *Service) Suggested(ctx context.Context, p *auth.Principal, projectID, appType string) (Suggestions, error) {
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return Suggestions{}, err
	}
	list, err := suggestionsFor(appType)
	if err != nil {
		return Suggestions{}, err
	}
	return Suggestions{AppType: strings.ToLower(strings.TrimSpace(appType)), Suggestions: list}, nil
}

// CreateSuggested creates the chosen suggestions, all or none.
func (s *Service) CreateSuggested(ctx context.Context, p *auth.Principal, projectID string, req SuggestRequest) ([]Agent, error) {
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, projectID); err != nil {
		return nil, err
	}
	list, err := suggestionsFor(req.AppType)
	if err != nil {
		return nil, err
	}
	if len(req.Keys) == 0 {
		return nil, api.Invalid("keys is required: the suggestions to create").With("field", "keys")
	}
	byKey := map[string]Suggestion{}
	for _, sg := range list {
		byKey[sg.Key] = sg
	}
	var out []Agent
	seen := map[string]bool{}
	for _, k := range req.Keys {
		sg, ok := byKey[k]
		if !ok {
			return nil, api.Invalid("%q is not a suggestion for %s", k, req.AppType).With("field", "keys")
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		steps := DefaultSteps
		tr := sg.Trigger
		a, err := s.newAgent(p.WorkspaceID, projectID, CreateRequest{Name: sg.Name, Model: "service-1", Instructions: sg.Instructions,
			Tools: sg.Tools, MaxSteps: &steps, AllowWrites: sg.AllowWrites, Trigger: &tr, Purpose: sg.Purpose})
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		for _, a := range out {
			if err := s.st.insertAgent(ctx, tx, a); err != nil {
				return err
			}
			if err := s.d.Audit.Record(ctx, tx, s.event(p, a, "agent.create", "created agent "+a.Name+" (suggested)")); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
