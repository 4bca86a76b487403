package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
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

// pathID checks an id argument that goes into a path (api.PathID).
func pathID(field, v string) (string, error) {
	id, ok := api.PathID(v)
	if !ok {
		return "", badArgs("%s is required: an id such as those the other tools return", field)
	}
	return id, nil
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
	DatabaseID string            `json:"databaseId" jsonschema:"the database's id (db_...)"`
	SQL        string            `json:"sql" jsonschema:"one or more statements"`
	Params     []json.RawMessage `json:"params,omitempty" jsonschema:"values for the ? placeholders"`
}

type dbBody struct {
	SQL    string            `json:"sql"`
	Params []json.RawMessage `json:"params,omitempty"`
}

type vectorQueryArgs struct {
	CollectionID   string          `json:"collectionId" jsonschema:"the collection's id"`
	Text           string          `json:"text,omitempty" jsonschema:"text to search for"`
	Vector         json.RawMessage `json:"vector,omitempty"`
	TopK           int             `json:"topK,omitempty"`
	Filter         json.RawMessage `json:"filter,omitempty" jsonschema:"metadata filter"`
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
	CollectionID string         `json:"collectionId"`
	Vectors      []vectorRecord `json:"vectors"`
}

// vectorRecord is one vector of vector_upsert, passed to the API as is.
type vectorRecord struct {
	ID        string          `json:"id"`
	Text      string          `json:"text,omitempty"`
	Values    []float64       `json:"values,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
}

type paymentsListArgs struct {
	AccountID string `json:"accountId" jsonschema:"the payment account's id, from payments_overview"`
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
	StoreID string   `json:"storeId" jsonschema:"the store's id (mem_...), from memory_stores"`
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
	Key        string          `json:"key" jsonschema:"at most 512 bytes"`
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
func memoryKeys(a memoryKeysArgs) (string, memory.KeysRequest, error) {
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

// argSchemas lets a json.RawMessage argument hold any JSON unless an edit
// narrows it (a schema with only a description, as an empty one would be
// written `true`, which not every model's API takes).
var argSchemas = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Description: anyJSON},
}}

const anyJSON = "any JSON value"

// withArgs completes t with its parameters' schema, inferred from In as
// the connector infers its tools' (mcp.NewTool) and adjusted by edit, and
// with build, which gets the arguments decoded strictly into In.
func withArgs[In any](t *Tool, build func(project string, a In) (toolRequest, error), edit ...func(*jsonschema.Schema)) *Tool {
	s, err := jsonschema.For[In](argSchemas)
	if err != nil {
		panic(fmt.Sprintf("agents: tool %s: parameters: %v", t.Name, err))
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	notNull(s)
	for _, e := range edit {
		e(s)
	}
	if t.Parameters, err = json.Marshal(s); err != nil {
		panic(fmt.Sprintf("agents: tool %s: parameters: %v", t.Name, err))
	}
	t.build = func(p string, raw json.RawMessage) (toolRequest, error) {
		var a In
		if err := decodeArgs(raw, &a); err != nil {
			return toolRequest{}, err
		}
		return build(p, a)
	}
	return t
}

// notNull makes the slices For infers as ["null", "array"] plain arrays, as
// a model should send them, in s and below.
func notNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	notNull(s.Items)
	for _, p := range s.Properties {
		notNull(p)
	}
}

// between bounds an integer property.
func between(name string, lo, hi float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := s.Properties[name]
		p.Minimum = &lo
		if hi > 0 {
			p.Maximum = &hi
		}
	}
}

// count bounds the items of an array property.
func count(name string, lo, hi int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { p := s.Properties[name]; p.MinItems, p.MaxItems = &lo, &hi }
}

// oneOf lists a string property's values.
func oneOf(name string, values ...any) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Properties[name].Enum = values }
}

// typed gives a json.RawMessage property (or a slice of them) its type and
// its items' type ("" for any).
func typed(name, typ, items string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := s.Properties[name]
		p.Type, p.Items = typ, nil
		if p.Description == anyJSON {
			p.Description = ""
		}
		if items != "" {
			p.Items = &jsonschema.Schema{Type: items}
		}
	}
}

// query holds the pairs of kv (name, value, ...) whose value is not empty.
func query(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// itoa is n in decimal, or "" for 0 (an argument left out).
func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// get is a tool that reads path below the agent's project and takes no
// arguments.
func get(t *Tool, path string) *Tool {
	return withArgs(t, func(p string, _ noArgs) (toolRequest, error) {
		return toolRequest{Method: http.MethodGet, Path: "/api/projects/" + p + path}, nil
	})
}

// catalogue is every tool, in the order the catalogue lists them.
var catalogue = buildCatalogue()

func buildCatalogue() []*Tool {
	const G, P = http.MethodGet, http.MethodPost
	tools := []*Tool{
		get(&Tool{Name: "project_info", op: auth.OpProjectRead,
			Description: "Read the agent's project: name, slug, addresses, what it serves now (serving.state), what Deploy would do, and counts of its services."}, ""),
		get(&Tool{Name: "deploy_status", op: auth.OpProjectRead,
			Description: "List the project's recent deployments, newest first, with their state (deploying, live, failed) and log summary."}, "/deployments"),
		get(&Tool{Name: "env_names", op: auth.OpEnvRead,
			Description: "List the names of the project's environment variables (never their values).",
			shape:       envNamesOnly}, "/env"),
		withArgs(&Tool{Name: "database_query", op: auth.OpDatabaseQuery,
			Description: "Run read-only SQL (SELECT, EXPLAIN) on one of the project's SQLite databases. Bind every value with ? and params."},
			func(_ string, a dbArgs) (toolRequest, error) { return databaseRequest(a, true) },
			typed("params", "array", "")),
		withArgs(&Tool{Name: "database_execute", op: auth.OpDatabaseQuery,
			Description: "Run SQL that may change data (INSERT, UPDATE, DELETE, CREATE ...) on one of the project's SQLite databases, as one transaction. Bind every value with ? and params."},
			func(_ string, a dbArgs) (toolRequest, error) { return databaseRequest(a, false) },
			typed("params", "array", "")),
		withArgs(&Tool{Name: "vector_query", op: auth.OpVectorRead, chat: true,
			Description: "Search one of the project's vector collections by text (embedded by the service) or by vector; answers the nearest matches with their scores and metadata."},
			func(_ string, a vectorQueryArgs) (toolRequest, error) {
				id, err := pathID("collectionId", a.CollectionID)
				return toolRequest{Method: P, Path: "/api/vectors/" + id + "/query", Body: vectorQueryBody{Text: a.Text, Vector: a.Vector,
					TopK: a.TopK, Filter: a.Filter, Namespace: a.Namespace, ReturnMetadata: a.ReturnMetadata}}, err
			},
			typed("vector", "array", "number"), typed("filter", "object", ""), between("topK", 1, 100),
			oneOf("returnMetadata", "none", "indexed", "all")),
		withArgs(&Tool{Name: "vector_upsert", op: auth.OpVectorWrite,
			Description: "Write vectors (by id) into one of the project's collections: each {id, text or values, metadata?, namespace?}; at most 100 with text, 1,000 with values."},
			func(_ string, a vectorUpsertArgs) (toolRequest, error) {
				id, err := pathID("collectionId", a.CollectionID)
				return toolRequest{Method: P, Path: "/api/vectors/" + id + "/upsert", Body: map[string]any{"vectors": a.Vectors}}, err
			},
			func(s *jsonschema.Schema) { typed("metadata", "object", "")(s.Properties["vectors"].Items) }),
		get(&Tool{Name: "memory_stores", op: memory.OpRead,
			Description: "List the project's memory stores (key-value): id, name, how many keys and bytes each holds, and its limits."}, "/memory"),
		withArgs(&Tool{Name: "memory_recall", op: memory.OpRead,
			Description: "Read up to 20 keys of one of the project's memory stores: each key's value (text, or base64 with base64 true), metadata and expiry, or null when it is not there."},
			func(_ string, a memoryKeysArgs) (toolRequest, error) {
				base, body, err := memoryKeys(a)
				return toolRequest{Method: P, Path: base + "/bulk/get", Body: body}, err
			},
			count("keys", 1, maxMemoryKeys)),
		withArgs(&Tool{Name: "memory_keys", op: memory.OpRead,
			Description: "List keys of one of the project's memory stores in order, optionally those starting with prefix (limit 1-1000, cursor from the previous page); values are read with memory_recall."},
			func(_ string, a memoryListArgs) (toolRequest, error) {
				base, err := memoryTarget(a.StoreID)
				return toolRequest{Method: G, Path: base + "/keys", Query: query("prefix", a.Prefix, "limit", itoa(a.Limit), "cursor", a.Cursor)}, err
			},
			between("limit", 1, 1000)),
		withArgs(&Tool{Name: "memory_remember", op: memory.OpWrite,
			Description: "Store a text value under a key in one of the project's memory stores, replacing what the key held (at most 1 MiB; ttlSeconds to have it forgotten later; metadata any JSON of at most 1 KB)."},
			func(_ string, a memoryRememberArgs) (toolRequest, error) {
				base, err := memoryTarget(a.StoreID)
				return toolRequest{Method: http.MethodPut, Path: base + "/bulk", Body: memory.BulkPutRequest{Entries: []memory.Entry{
					{Key: a.Key, Value: a.Value, TTLSeconds: a.TTLSeconds, Metadata: a.Metadata}}}}, err
			},
			between("ttlSeconds", 1, 0)),
		withArgs(&Tool{Name: "memory_forget", op: memory.OpWrite,
			Description: "Delete up to 20 keys of one of the project's memory stores; answers how many were there."},
			func(_ string, a memoryKeysArgs) (toolRequest, error) {
				base, body, err := memoryKeys(a)
				return toolRequest{Method: P, Path: base + "/bulk/delete", Body: body}, err
			},
			count("keys", 1, maxMemoryKeys)),
		get(&Tool{Name: "payments_overview", op: auth.OpPaymentsRead,
			Description: "Read the project's payment account: earnings, recent payments, checkout links and webhook deliveries."}, "/payments"),
		withArgs(&Tool{Name: "payments_list", op: auth.OpPaymentsRead,
			Description: "List an account's payments, newest first (limit 1-100, cursor, status, reference)."},
			func(_ string, a paymentsListArgs) (toolRequest, error) {
				id, err := pathID("accountId", a.AccountID)
				return toolRequest{Method: G, Path: "/api/payments/" + id + "/payments",
					Query: query("limit", itoa(a.Limit), "cursor", a.Cursor, "status", a.Status, "reference", a.Reference)}, err
			},
			between("limit", 1, 100)),
		withArgs(&Tool{Name: "payment_lookup", op: auth.OpPaymentsRead,
			Description: "Whether a checkout session was paid, checked with the processor."},
			func(_ string, a paymentLookupArgs) (toolRequest, error) {
				acc, err := pathID("accountId", a.AccountID)
				if err != nil {
					return toolRequest{}, err
				}
				ses, err := pathID("sessionId", a.SessionID)
				return toolRequest{Method: G, Path: "/api/payments/" + acc + "/sessions/" + ses}, err
			}),
		get(&Tool{Name: "media_list", op: auth.OpMediaRead,
			Description: "List the project's videos and live channels with their status."}, "/media"),
		withArgs(&Tool{Name: "media_status", op: auth.OpMediaRead,
			Description: "Read one video or live channel: status (pending_upload, processing, ready), duration and playback URL."},
			func(_ string, a mediaArgs) (toolRequest, error) {
				id, err := pathID("mediaId", a.MediaID)
				return toolRequest{Method: G, Path: "/api/media/" + id}, err
			}),
		// Workspace-wide: listed so that the catalogue says why they are
		// not offered; never callable by a run key.
		withArgs(&Tool{Name: "repo_files_read", op: auth.OpRepoRead, wide: true,
			Description: "Read a repo's file tree or one text file."},
			func(_ string, a repoArgs) (toolRequest, error) {
				id, err := pathID("repoId", a.RepoID)
				return toolRequest{Method: G, Path: "/api/repos/" + id + "/files", Query: query("path", a.Path)}, err
			},
			between("commit", 1, 0)),
		withArgs(&Tool{Name: "list_projects", op: auth.OpProjectList, wide: true,
			Description: "List every project of the workspace."},
			func(string, noArgs) (toolRequest, error) { return toolRequest{Method: G, Path: "/api/projects"}, nil }),
		withArgs(&Tool{Name: "usage_report", op: auth.OpUsageRead, wide: true,
			Description: "The workspace's usage against its plan."},
			func(string, noArgs) (toolRequest, error) { return toolRequest{Method: G, Path: "/api/usage"}, nil }),
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
func databaseRequest(a dbArgs, readOnly bool) (toolRequest, error) {
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
