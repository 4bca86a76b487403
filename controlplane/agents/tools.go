package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/memory"
)

// Tool is one entry of the tool catalogue. A tool is one REST route of the
// API, called with the run's key: what it may do is what the permission
// table lets that key do.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Available is false for tools no run key can use (workspace-wide
	// ones); Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// NeedsWrites (shown with ?writes=1) marks tools that need the agent's
	// allowWrites: the run key is read-only otherwise.
	NeedsWrites  bool   `json:"needsWrites,omitempty"`
	WritesReason string `json:"writesReason,omitempty"`

	op    auth.Op
	wide  bool // covers the whole workspace: never offered
	chat  bool // offered to visitor chat runs
	build func(project string, args json.RawMessage) (toolRequest, error)
	// shape rewrites a successful answer before the model sees it.
	shape func(body []byte) []byte
}

// toolRequest is the REST call a tool makes.
type toolRequest struct {
	Method string
	Path   string
	Query  url.Values
	Body   any
}

// errBadArguments marks arguments a tool refused before calling the API.
var errBadArguments = errors.New("agents: bad tool arguments")

func badArgs(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadArguments, fmt.Sprintf(format, args...))
}

// decodeArgs reads a tool call's JSON arguments strictly into dst.
func decodeArgs(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badArgs("arguments must be a JSON object matching the tool's schema: %v", err)
	}
	return nil
}

// pathID checks an id argument that goes into a path.
func pathID(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 100 || strings.ContainsAny(v, "/?#%\\ ") {
		return "", badArgs("%s is required: an id such as those the other tools return", field)
	}
	return url.PathEscape(v), nil
}

// The tools that manage keys, switch workspace, run agents or need an admin
// are never given to an agent; naming one says so.
var neverGiven = map[string]string{
	"create_key": "keys", "revoke_key": "keys", "list_keys": "keys",
	"list_members": "members", "invite_member": "members", "update_member": "members", "remove_member": "members",
	"audit_log": "the audit log", "get_audit_log": "the audit log",
	"balance": "the Balance", "get_balance": "the Balance", "billing": "the Balance", "set_spend_limit": "the Balance",
	"get_service_config": "service settings", "update_service_config": "service settings", "ai_settings": "service settings",
	"switch_workspace": "switching workspace",
	"run_agent":        "running agents", "create_agent": "running agents", "update_agent": "running agents", "delete_agent": "running agents",
}

type noArgs struct{}

type dbArgs struct {
	DatabaseID string            `json:"databaseId"`
	SQL        string            `json:"sql"`
	Params     []json.RawMessage `json:"params,omitempty"`
}

type dbBody struct {
	SQL    string            `json:"sql"`
	Params []json.RawMessage `json:"params,omitempty"`
}

type vectorQueryArgs struct {
	CollectionID   string          `json:"collectionId"`
	Text           string          `json:"text,omitempty"`
	Vector         json.RawMessage `json:"vector,omitempty"`
	TopK           int             `json:"topK,omitempty"`
	Filter         json.RawMessage `json:"filter,omitempty"`
	Namespace      string          `json:"namespace,omitempty"`
	ReturnMetadata string          `json:"returnMetadata,omitempty"`
}

type vectorQueryBody struct {
	Text           string          `json:"text,omitempty"`
	Vector         json.RawMessage `json:"vector,omitempty"`
	TopK           int             `json:"topK,omitempty"`
	Filter         json.RawMessage `json:"filter,omitempty"`
	Namespace      string          `json:"namespace,omitempty"`
	ReturnMetadata string          `json:"returnMetadata,omitempty"`
}

type vectorUpsertArgs struct {
	CollectionID string            `json:"collectionId"`
	Vectors      []json.RawMessage `json:"vectors"`
}

type paymentsListArgs struct {
	AccountID string `json:"accountId"`
	Limit     int    `json:"limit,omitempty"`
	Cursor    string `json:"cursor,omitempty"`
	Status    string `json:"status,omitempty"`
	Reference string `json:"reference,omitempty"`
}

type paymentLookupArgs struct {
	AccountID string `json:"accountId"`
	SessionID string `json:"sessionId"`
}

type memoryKeysArgs struct {
	StoreID string   `json:"storeId"`
	Keys    []string `json:"keys"`
}

type memoryListArgs struct {
	StoreID string `json:"storeId"`
	Prefix  string `json:"prefix,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Cursor  string `json:"cursor,omitempty"`
}

type memoryRememberArgs struct {
	StoreID    string          `json:"storeId"`
	Key        string          `json:"key"`
	Value      string          `json:"value"`
	TTLSeconds int64           `json:"ttlSeconds,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// maxMemoryKeys bounds the keys of one memory_recall or memory_forget.
const maxMemoryKeys = 20

// memoryTarget checks a memory tool's store id and returns its path.
func memoryTarget(storeID string) (string, error) {
	id, err := pathID("storeId", storeID)
	return "/api/memory/" + id, err
}

// memoryKeys checks the arguments of a recall or forget (1 to
// maxMemoryKeys keys; the API checks each key itself).
func memoryKeys(raw json.RawMessage) (string, memory.KeysRequest, error) {
	var a memoryKeysArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", memory.KeysRequest{}, err
	}
	base, err := memoryTarget(a.StoreID)
	if err != nil {
		return "", memory.KeysRequest{}, err
	}
	if len(a.Keys) == 0 || len(a.Keys) > maxMemoryKeys {
		return "", memory.KeysRequest{}, badArgs("keys must hold 1 to %d keys", maxMemoryKeys)
	}
	return base, memory.KeysRequest{Keys: a.Keys}, nil
}

type mediaArgs struct {
	MediaID string `json:"mediaId"`
}

type repoArgs struct {
	RepoID string `json:"repoId"`
	Path   string `json:"path,omitempty"`
	Commit int    `json:"commit,omitempty"`
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

const emptySchema = `{"type":"object","properties":{},"additionalProperties":false}`

// catalogue is every tool, in the order the catalogue lists them.
var catalogue = buildCatalogue()

func buildCatalogue() []*Tool {
	const G, P = http.MethodGet, http.MethodPost
	tools := []*Tool{
		{Name: "project_info", op: auth.OpProjectRead,
			Description: "Read the agent's project: name, slug, addresses, what it serves now (serving.state), what Deploy would do, and counts of its services.",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p}, decodeArgs(raw, &noArgs{})
			}},
		{Name: "deploy_status", op: auth.OpProjectRead,
			Description: "List the project's recent deployments, newest first, with their state (deploying, live, failed) and log summary.",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p + "/deployments"}, decodeArgs(raw, &noArgs{})
			}},
		{Name: "env_names", op: auth.OpEnvRead,
			Description: "List the names of the project's environment variables (never their values).",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p + "/env"}, decodeArgs(raw, &noArgs{})
			},
			shape: envNamesOnly},
		{Name: "database_query", op: auth.OpDatabaseQuery,
			Description: "Run read-only SQL (SELECT, EXPLAIN) on one of the project's SQLite databases. Bind every value with ? and params.",
			Parameters:  schema(`{"type":"object","properties":{"databaseId":{"type":"string","description":"the database's id (db_...)"},"sql":{"type":"string","description":"one or more read-only statements"},"params":{"type":"array","description":"values for the ? placeholders"}},"required":["databaseId","sql"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				return databaseRequest(raw, true)
			}},
		{Name: "database_execute", op: auth.OpDatabaseQuery,
			Description: "Run SQL that may change data (INSERT, UPDATE, DELETE, CREATE ...) on one of the project's SQLite databases, as one transaction. Bind every value with ? and params.",
			Parameters:  schema(`{"type":"object","properties":{"databaseId":{"type":"string","description":"the database's id (db_...)"},"sql":{"type":"string","description":"one or more statements"},"params":{"type":"array","description":"values for the ? placeholders"}},"required":["databaseId","sql"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				return databaseRequest(raw, false)
			}},
		{Name: "vector_query", op: auth.OpVectorRead, chat: true,
			Description: "Search one of the project's vector collections by text (embedded by the service) or by vector; answers the nearest matches with their scores and metadata.",
			Parameters:  schema(`{"type":"object","properties":{"collectionId":{"type":"string","description":"the collection's id"},"text":{"type":"string","description":"text to search for"},"vector":{"type":"array","items":{"type":"number"}},"topK":{"type":"integer","minimum":1,"maximum":100},"filter":{"type":"object","description":"metadata filter"},"namespace":{"type":"string"},"returnMetadata":{"type":"string","enum":["none","indexed","all"]}},"required":["collectionId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a vectorQueryArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				id, err := pathID("collectionId", a.CollectionID)
				if err != nil {
					return toolRequest{}, err
				}
				return toolRequest{Method: P, Path: "/api/vectors/" + id + "/query", Body: vectorQueryBody{Text: a.Text, Vector: a.Vector,
					TopK: a.TopK, Filter: a.Filter, Namespace: a.Namespace, ReturnMetadata: a.ReturnMetadata}}, nil
			}},
		{Name: "vector_upsert", op: auth.OpVectorWrite,
			Description: "Write vectors (by id) into one of the project's collections: each {id, text or values, metadata?, namespace?}; at most 100 with text, 1,000 with values.",
			Parameters:  schema(`{"type":"object","properties":{"collectionId":{"type":"string"},"vectors":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"text":{"type":"string"},"values":{"type":"array","items":{"type":"number"}},"metadata":{"type":"object"},"namespace":{"type":"string"}},"required":["id"]}}},"required":["collectionId","vectors"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a vectorUpsertArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				id, err := pathID("collectionId", a.CollectionID)
				if err != nil {
					return toolRequest{}, err
				}
				return toolRequest{Method: P, Path: "/api/vectors/" + id + "/upsert", Body: map[string]any{"vectors": a.Vectors}}, nil
			}},
		{Name: "memory_stores", op: memory.OpRead,
			Description: "List the project's memory stores (key-value): id, name, how many keys and bytes each holds, and its limits.",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p + "/memory"}, decodeArgs(raw, &noArgs{})
			}},
		{Name: "memory_recall", op: memory.OpRead,
			Description: "Read up to 20 keys of one of the project's memory stores: each key's value (text, or base64 with base64 true), metadata and expiry, or null when it is not there.",
			Parameters:  schema(`{"type":"object","properties":{"storeId":{"type":"string","description":"the store's id (mem_...), from memory_stores"},"keys":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":20}},"required":["storeId","keys"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				base, body, err := memoryKeys(raw)
				return toolRequest{Method: P, Path: base + "/bulk/get", Body: body}, err
			}},
		{Name: "memory_keys", op: memory.OpRead,
			Description: "List keys of one of the project's memory stores in order, optionally those starting with prefix (limit 1-1000, cursor from the previous page); values are read with memory_recall.",
			Parameters:  schema(`{"type":"object","properties":{"storeId":{"type":"string"},"prefix":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":1000},"cursor":{"type":"string"}},"required":["storeId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a memoryListArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				base, err := memoryTarget(a.StoreID)
				if err != nil {
					return toolRequest{}, err
				}
				q := url.Values{}
				if a.Prefix != "" {
					q.Set("prefix", a.Prefix)
				}
				if a.Limit != 0 {
					q.Set("limit", strconv.Itoa(a.Limit))
				}
				if a.Cursor != "" {
					q.Set("cursor", a.Cursor)
				}
				return toolRequest{Method: G, Path: base + "/keys", Query: q}, nil
			}},
		{Name: "memory_remember", op: memory.OpWrite,
			Description: "Store a text value under a key in one of the project's memory stores, replacing what the key held (at most 1 MiB; ttlSeconds to have it forgotten later; metadata any JSON of at most 1 KB).",
			Parameters:  schema(`{"type":"object","properties":{"storeId":{"type":"string"},"key":{"type":"string","description":"at most 512 bytes"},"value":{"type":"string"},"ttlSeconds":{"type":"integer","minimum":1},"metadata":{}},"required":["storeId","key","value"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a memoryRememberArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				base, err := memoryTarget(a.StoreID)
				if err != nil {
					return toolRequest{}, err
				}
				return toolRequest{Method: http.MethodPut, Path: base + "/bulk", Body: memory.BulkPutRequest{Entries: []memory.Entry{
					{Key: a.Key, Value: a.Value, TTLSeconds: a.TTLSeconds, Metadata: a.Metadata}}}}, nil
			}},
		{Name: "memory_forget", op: memory.OpWrite,
			Description: "Delete up to 20 keys of one of the project's memory stores; answers how many were there.",
			Parameters:  schema(`{"type":"object","properties":{"storeId":{"type":"string"},"keys":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":20}},"required":["storeId","keys"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				base, body, err := memoryKeys(raw)
				return toolRequest{Method: P, Path: base + "/bulk/delete", Body: body}, err
			}},
		{Name: "payments_overview", op: auth.OpPaymentsRead,
			Description: "Read the project's payment account: earnings, recent payments, checkout links and webhook deliveries.",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p + "/payments"}, decodeArgs(raw, &noArgs{})
			}},
		{Name: "payments_list", op: auth.OpPaymentsRead,
			Description: "List an account's payments, newest first (limit 1-100, cursor, status, reference).",
			Parameters:  schema(`{"type":"object","properties":{"accountId":{"type":"string","description":"the payment account's id, from payments_overview"},"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"},"status":{"type":"string"},"reference":{"type":"string"}},"required":["accountId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a paymentsListArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				id, err := pathID("accountId", a.AccountID)
				if err != nil {
					return toolRequest{}, err
				}
				q := url.Values{}
				if a.Limit != 0 {
					q.Set("limit", strconv.Itoa(a.Limit))
				}
				for k, v := range map[string]string{"cursor": a.Cursor, "status": a.Status, "reference": a.Reference} {
					if v != "" {
						q.Set(k, v)
					}
				}
				return toolRequest{Method: G, Path: "/api/payments/" + id + "/payments", Query: q}, nil
			}},
		{Name: "payment_lookup", op: auth.OpPaymentsRead,
			Description: "Whether a checkout session was paid, checked with the processor.",
			Parameters:  schema(`{"type":"object","properties":{"accountId":{"type":"string"},"sessionId":{"type":"string"}},"required":["accountId","sessionId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a paymentLookupArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				acc, err := pathID("accountId", a.AccountID)
				if err != nil {
					return toolRequest{}, err
				}
				ses, err := pathID("sessionId", a.SessionID)
				if err != nil {
					return toolRequest{}, err
				}
				return toolRequest{Method: G, Path: "/api/payments/" + acc + "/sessions/" + ses}, nil
			}},
		{Name: "media_list", op: auth.OpMediaRead,
			Description: "List the project's videos and live channels with their status.",
			Parameters:  schema(emptySchema),
			build: func(p string, raw json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects/" + p + "/media"}, decodeArgs(raw, &noArgs{})
			}},
		{Name: "media_status", op: auth.OpMediaRead,
			Description: "Read one video or live channel: status (pending_upload, processing, ready), duration and playback URL.",
			Parameters:  schema(`{"type":"object","properties":{"mediaId":{"type":"string"}},"required":["mediaId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a mediaArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				id, err := pathID("mediaId", a.MediaID)
				if err != nil {
					return toolRequest{}, err
				}
				return toolRequest{Method: G, Path: "/api/media/" + id}, nil
			}},
		// Workspace-wide: listed so that the catalogue says why they are
		// not offered; never callable by a run key.
		{Name: "repo_files_read", op: auth.OpRepoRead, wide: true,
			Description: "Read a repo's file tree or one text file.",
			Parameters:  schema(`{"type":"object","properties":{"repoId":{"type":"string"},"path":{"type":"string"},"commit":{"type":"integer","minimum":1}},"required":["repoId"],"additionalProperties":false}`),
			build: func(_ string, raw json.RawMessage) (toolRequest, error) {
				var a repoArgs
				if err := decodeArgs(raw, &a); err != nil {
					return toolRequest{}, err
				}
				id, err := pathID("repoId", a.RepoID)
				if err != nil {
					return toolRequest{}, err
				}
				q := url.Values{}
				if a.Path != "" {
					q.Set("path", a.Path)
				}
				return toolRequest{Method: G, Path: "/api/repos/" + id + "/files", Query: q}, nil
			}},
		{Name: "list_projects", op: auth.OpProjectList, wide: true,
			Description: "List every project of the workspace.",
			Parameters:  schema(emptySchema),
			build: func(string, json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/projects"}, nil
			}},
		{Name: "usage_report", op: auth.OpUsageRead, wide: true,
			Description: "The workspace's usage against its plan.",
			Parameters:  schema(emptySchema),
			build: func(string, json.RawMessage) (toolRequest, error) {
				return toolRequest{Method: G, Path: "/api/usage"}, nil
			}},
	}
	tools = append(tools, emailTools()...)
	for _, t := range tools {
		rule, ok := auth.RuleOf(t.op)
		if !ok {
			panic("agents: tool " + t.Name + " names an operation outside the permission table")
		}
		switch {
		case t.wide || rule.Scope == auth.ScopeWorkspace:
			t.wide = true
			t.Reason = "covers the whole workspace; a run's key is limited to the agent's project"
		case rule.OwnerSession || rule.SessionOnly:
			t.wide = true
			t.Reason = "needs the owner signed in to the dashboard"
		default:
			t.Available = true
		}
		switch {
		case rule.Write:
			t.NeedsWrites, t.WritesReason = true, "changes data: the run's key is read-only unless the agent has allowWrites and its starter can make changes"
		case rule.FullAccess:
			t.NeedsWrites, t.WritesReason = true, "needs a full-access key even to read; the run's key is read-only unless the agent has allowWrites"
		}
	}
	return tools
}

// databaseRequest builds a database tool's call; readOnly refuses
// statements that may change anything.
func databaseRequest(raw json.RawMessage, readOnly bool) (toolRequest, error) {
	var a dbArgs
	if err := decodeArgs(raw, &a); err != nil {
		return toolRequest{}, err
	}
	id, err := pathID("databaseId", a.DatabaseID)
	if err != nil {
		return toolRequest{}, err
	}
	if strings.TrimSpace(a.SQL) == "" {
		return toolRequest{}, badArgs("sql is required")
	}
	if readOnly {
		for _, st := range databases.Split(a.SQL) {
			if !st.ReadOnly() {
				return toolRequest{}, badArgs("database_query runs read-only statements (SELECT, EXPLAIN) only; use database_execute to change data")
			}
		}
	}
	return toolRequest{Method: http.MethodPost, Path: "/api/databases/" + id, Body: dbBody{SQL: a.SQL, Params: a.Params}}, nil
}

// envNamesOnly keeps the variable names of an env listing, never values.
func envNamesOnly(body []byte) []byte {
	var l struct {
		Variables []struct {
			Key string `json:"key"`
		} `json:"variables"`
		System map[string]json.RawMessage `json:"system"`
	}
	if json.Unmarshal(body, &l) != nil {
		return []byte(`{"names":[]}`)
	}
	names := make([]string, 0, len(l.Variables)+len(l.System))
	for _, v := range l.Variables {
		names = append(names, v.Key)
	}
	for k := range l.System {
		names = append(names, k)
	}
	sort.Strings(names)
	out, _ := json.Marshal(map[string]any{"names": names})
	return out
}

// toolByName returns the catalogue's tool called name.
func toolByName(name string) (*Tool, bool) {
	for _, t := range catalogue {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Catalogue returns the tool catalogue; with writes, tools needing writes
// carry needsWrites and writesReason.
func Catalogue(writes bool) []Tool {
	out := make([]Tool, 0, len(catalogue))
	for _, t := range catalogue {
		c := *t
		if !writes {
			c.NeedsWrites, c.WritesReason = false, ""
		}
		out = append(out, c)
	}
	return out
}

// checkTools validates an agent's tool list against the catalogue and its
// allowWrites: an unknown name, a tool never given to agents, a
// workspace-wide tool and a tool needing writes without allowWrites are
// 400 with the reason.
func checkTools(names []string, allowWrites bool) ([]string, error) {
	seen := map[string]bool{}
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if seen[n] {
			continue
		}
		seen[n] = true
		if what, never := neverGiven[n]; never {
			return nil, api.E(api.KindInvalid, "tool_not_allowed", "tool %s is never given to an agent: agents get no tools for %s", n, what).With("tool", n)
		}
		t, ok := toolByName(n)
		if !ok {
			return nil, api.E(api.KindInvalid, "unknown_tool", "%q is not a tool; GET /api/agents/tools lists them", n).With("tool", n)
		}
		if !t.Available {
			return nil, api.E(api.KindInvalid, "tool_not_allowed", "tool %s cannot be used by an agent: %s", n, t.Reason).With("tool", n)
		}
		if t.NeedsWrites && !allowWrites {
			return nil, api.E(api.KindInvalid, "tool_needs_writes", "tool %s %s; set allowWrites true to use it", n, t.WritesReason).With("tool", n)
		}
		out = append(out, n)
	}
	return out, nil
}
