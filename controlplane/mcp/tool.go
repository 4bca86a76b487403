package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/svcplatform/platform/controlplane/api"
)

// Tool is one connector tool: its MCP definition (name, description, input
// schema, hints) and how its validated arguments become the REST call of the
// matching route. Build rows with NewTool.
type Tool struct {
	// Def is what tools/list shows.
	Def *sdk.Tool
	// add registers the tool on an SDK server, serving calls with run.
	add func(s *sdk.Server, run runFunc)
}

// runFunc makes a tool's REST call for one tools/call request.
type runFunc func(ctx context.Context, tool string, req *sdk.CallToolRequest, rq Request) (*sdk.CallToolResult, any, error)

// Hints say what a tool does to the workspace, for the assistant.
type Hints struct {
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Destructive: the tool may replace or remove what exists (a push
	// replaces the repo's files in the new commit, a deploy replaces what
	// is served).
	Destructive bool
	// Idempotent: calling twice with the same arguments does no more.
	Idempotent bool
}

// NewTool makes a table row: the input schema is inferred from In (field
// descriptions from `jsonschema:"..."` tags; fields without omitempty are
// required; unknown arguments are refused), edit (when given) refines it,
// and build turns the validated arguments into the REST request. A build
// error that is a *Refusal is answered as that REST error without calling
// the API.
func NewTool[In any](name, title, description string, h Hints, build func(In) (Request, error), edit ...func(*jsonschema.Schema)) Tool {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %s: input schema: %v", name, err))
	}
	for _, e := range edit {
		e(schema)
	}
	destructive := h.Destructive
	openWorld := false
	def := &sdk.Tool{
		Name: name, Title: title, Description: description, InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{Title: title, ReadOnlyHint: h.ReadOnly, DestructiveHint: &destructive,
			IdempotentHint: h.Idempotent, OpenWorldHint: &openWorld},
	}
	return Tool{Def: def, add: func(s *sdk.Server, run runFunc) {
		sdk.AddTool(s, def, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			rq, err := build(in)
			if err != nil {
				if r, ok := err.(*Refusal); ok {
					res, out := toolResult(r.answer())
					return res, out, nil
				}
				return nil, nil, err
			}
			return run(ctx, name, req, rq)
		})
	}}
}

// toolResult turns a REST answer into the tool's result: the JSON answer as
// structured content (and as text); an error status sets IsError with the
// code and message as text, and the error body plus status as structured
// content.
func toolResult(a Answer) (*sdk.CallToolResult, any) {
	if a.Status < 400 {
		return &sdk.CallToolResult{}, a.Body
	}
	body := map[string]any{}
	json.Unmarshal(a.Body, &body)
	body["status"] = a.Status
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: errorText(a)}}}, body
}

// pathID checks an id argument and escapes it for a path segment.
func pathID(field, v string) (string, error) {
	id, ok := api.PathID(v)
	if !ok {
		return "", refuse(400, "invalid_request", "%s is required: an id such as the list tools answer", field)
	}
	return id, nil
}
