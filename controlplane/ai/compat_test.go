package ai

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
)

func (e *env) sdk(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.srv.URL+"/api/ai/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// The official OpenAI Go SDK, unchanged, against /api/ai/v1.
func TestOpenAISDK(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "Hello SDK world", InputTokens: 11, OutputTokens: 3})
	e.edge.Set("bge-small-en-v1.5", upstreamtest.Reply{Dimensions: 384})
	c := e.sdk(ownerKey)
	ctx := context.Background()

	t.Run("plain", func(t *testing.T) {
		out, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "service-1",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Choices[0].Message.Content != "Hello SDK world" || out.Model != "gpt-4.1-mini" || out.Usage.PromptTokens != 11 || out.Usage.CompletionTokens != 3 {
			t.Fatalf("%+v", out)
		}
		svc := out.JSON.ExtraFields["service"].Raw()
		if !strings.Contains(svc, `"provider":"openai"`) || !strings.Contains(svc, `"costMicros":10`) {
			t.Fatalf("service field %s", svc)
		}
	})
	t.Run("streaming with usage", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4.1-mini",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Choices[0].Message.Content != "Hello SDK world" || acc.Usage.TotalTokens != 14 || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("%+v", acc.ChatCompletion)
		}
	})
	t.Run("tool calls", func(t *testing.T) {
		e.openai.Set("gpt-4.1", upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_9", Name: "weather", Arguments: `{"city":"Oslo"}`}}})
		params := openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "weather",
				Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}}
		out, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		tc := out.Choices[0].Message.ToolCalls
		if len(tc) != 1 || tc[0].Function.Name != "weather" || tc[0].Function.Arguments != `{"city":"Oslo"}` || out.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("%+v", out.Choices[0])
		}
		st := c.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.ToolCalls; len(got) != 1 || got[0].Function.Arguments != `{"city":"Oslo"}` || got[0].ID != "call_9" {
			t.Fatalf("%+v", acc.Choices[0].Message)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
			out, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bge-small", EncodingFormat: format,
				Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Data) != 2 || len(out.Data[0].Embedding) != 384 && format == "float" {
				t.Fatalf("%s: %d vectors of %d", format, len(out.Data), len(out.Data[0].Embedding))
			}
		}
	})
	t.Run("models", func(t *testing.T) {
		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, m := range page.Data {
			ids[m.ID] = true
		}
		if !ids["service-1"] || !ids["gpt-4.1-mini"] || !ids["bge-base"] || ids["claude-opus-4-1"] {
			t.Fatalf("models %v", ids)
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-9",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unknown_model" || apiErr.Type != "invalid_request_error" {
			t.Fatalf("%v", err)
		}
		e.openai.Set("gpt-4.1", upstreamtest.Reply{Refuse: true})
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		if !errors.As(err, &apiErr) || apiErr.Code != "ai_request_refused" {
			t.Fatalf("%v", err)
		}
		// Refusals of authentication and of the permission table come in
		// the compatible shape too (type included).
		for _, c := range []struct {
			name, key, typ, code string
			status               int
			models               bool // refused listing the models too
		}{
			{"unknown key", "svc_not_a_key_at_all_0123456789", "authentication_error", "", 401, true},
			{"read-only key", e.Key("read_only", ""), "permission_error", "read_only_key", 403, false},
			{"project key", e.Key("full", "prj_a"), "permission_error", "workspace_key_required", 403, true},
		} {
			sc := e.sdk(c.key)
			_, err := sc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "service-1",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != c.status || apiErr.Type != c.typ || (c.code != "" && apiErr.Code != c.code) || apiErr.Message == "" {
				t.Errorf("%s: %v", c.name, err)
			}
			if _, err := sc.Models.List(ctx); c.models && (!errors.As(err, &apiErr) || apiErr.StatusCode != c.status || apiErr.Type != c.typ) {
				t.Errorf("%s, models: %v", c.name, err)
			}
		}
		// A stream that breaks midway reports stream_error to the SDK.
		e.openai.Set("gpt-4.1", upstreamtest.Reply{Chunks: []string{"a", "b", "c"}, CutAfter: 1})
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		for st.Next() {
		}
		if err := st.Err(); err == nil || !strings.Contains(err.Error(), "stream_error") {
			t.Fatalf("stream error %v", err)
		}
	})
	e.ledger.check(t)
}
