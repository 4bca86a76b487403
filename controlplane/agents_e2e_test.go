package controlplane_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// TestAgentRunThroughTheAssembly runs an agent on the assembled control
// plane: the model (a mock speaking OpenAI's protocol behind the real
// gateway) asks for the project, the tool calls this API with a key made
// for the run (accounts' CreateRunKey), the answer comes back and the run is
// charged.
func TestAgentRunThroughTheAssembly(t *testing.T) {
	// The model asks for the tool on its first call and answers in text on
	// the second, as OpenAI's Chat Completions protocol says.
	var calls atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := map[string]any{"role": "assistant", "content": "There is one variable: SECRET_TOKEN."}
		finish := "stop"
		if calls.Add(1) == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "project_info", "arguments": "{}"}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	}))
	t.Cleanup(model.Close)
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.AI = ai.Config{FirstByteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
			Providers: map[string]ai.ProviderConfig{"openai": {Protocol: "openai", BaseURL: model.URL + "/v1", APIKey: "sk-test"}}}
	}})
	prj := e.CreateProject("Agents")
	var created struct {
		Agent struct {
			ID string `json:"id"`
		} `json:"agent"`
	}
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+prj+"/agents", map[string]any{
		"name": "helper", "model": "gpt-4o-mini", "tools": []string{"project_info"}, "instructions": "Describe the project."}).JSON(t, &created)
	var out struct {
		Run struct {
			Status, Output string
			Steps          []struct {
				Kind     string
				ToolName string `json:"tool_name"`
				Result   string
				OK       bool
			}
			CostMicros int64 `json:"cost_micros"`
		} `json:"run"`
	}
	e.Owner.Must(http.StatusAccepted, "POST", "/api/agents/"+created.Agent.ID, map[string]any{"input": "what variables are there?"}).JSON(t, &out)
	if out.Run.Status != "completed" || calls.Load() != 2 {
		t.Fatalf("run = %+v", out.Run)
	}
	var sawTool bool
	for _, s := range out.Run.Steps {
		if s.ToolName == "project_info" {
			sawTool = true
			if !s.OK || !strings.Contains(s.Result, prj) {
				t.Fatalf("tool step = %+v", s)
			}
		}
	}
	if !sawTool || out.Run.CostMicros <= 0 {
		t.Fatalf("steps %+v, cost %d", out.Run.Steps, out.Run.CostMicros)
	}
}
