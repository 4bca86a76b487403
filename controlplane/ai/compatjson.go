package ai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/svcplatform/platform/controlplane/ai/internal/jsonscan"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/internal/jsonesc"
)

// The compatible chat request is read into a pooled buffer and, when it
// has the plain shape ({model?, messages: [{role, content: "…"}],
// max_tokens?, max_completion_tokens?, temperature?, stream?,
// stream_options?: {include_usage?}, tier?, projectId?}, exact key
// spellings, each once), decoded by hand; anything else (tools, n, text
// parts, null, other keys, invalid UTF-8) goes to json.Unmarshal, which
// decides as before. FuzzDecodeCompletionFast checks that whatever the
// fast path accepts, json.Unmarshal reads identically. The plain answer is
// written by hand too (appendCompletion; TestAppendCompletion and
// FuzzAppendCompletion check that encoding/json reads it back as the
// Completion api.WriteJSON would have written).

// decodeCompletion reads r's body into req as readBody would.
func decodeCompletion(r *http.Request, req *CompletionRequest) error {
	return decodePooled(r, req, decodeCompletionFast, func(b []byte, req *CompletionRequest) error {
		return unmarshalBody(b, req)
	})
}

// unmarshalBody is readBody's decoding of a body already read.
func unmarshalBody(data []byte, dst any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return api.Invalid("request body is empty; send a JSON object")
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return api.Invalid("invalid JSON: %v", err)
	}
	return nil
}

var (
	completionKeys    = []string{"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "stream", "stream_options", "tier", "projectId"}
	streamOptionsKeys = []string{"include_usage"}
)

// decodeCompletionFast decodes the plain shape of a compatible chat
// request. Nothing in the result points into data.
func decodeCompletionFast(data []byte) (CompletionRequest, bool) {
	var r CompletionRequest
	s := &jsonscan.Scanner{B: data}
	text := func(dst *string) bool { return scanText(s, dst) }
	count := func(dst **int) bool {
		n, ok := s.Int64()
		m := int(n)
		*dst = &m
		return ok
	}
	ok := s.Object(completionKeys, func(key string) bool {
		switch key {
		case "model":
			return text(&r.Model)
		case "tier":
			return text(&r.Tier)
		case "projectId":
			return text(&r.ProjectID)
		case "max_tokens":
			return count(&r.MaxTokens)
		case "max_completion_tokens":
			return count(&r.MaxCompletionTokens)
		case "temperature":
			f, ok := s.Float64()
			r.Temperature = &f
			return ok
		case "stream":
			v, ok := s.Bool()
			r.Stream = v
			return ok
		case "stream_options":
			r.StreamOptions = &struct {
				IncludeUsage bool `json:"include_usage"`
			}{}
			return s.Object(streamOptionsKeys, func(string) bool {
				v, ok := s.Bool()
				r.StreamOptions.IncludeUsage = v
				return ok
			})
		case "messages":
			var ok bool
			r.Messages, ok = scanMessages(s)
			return ok
		}
		return false
	})
	return r, ok && s.End()
}

// writeCompletion writes the compatible plain answer as
// api.WriteJSON(w, 200, completion(a, requested, created)) would.
func writeCompletion(w http.ResponseWriter, a *Answer, requested string, created int64) {
	writePooled(w, func(b []byte) []byte { return appendCompletion(b, a, requested, created) })
}

// appendCompletion appends completion(a, requested, created)'s JSON, in
// encoding/json's field order, and a newline (as json.Encoder ends).
func appendCompletion(b []byte, a *Answer, requested string, created int64) []byte {
	b = append(b, `{"id":`...)
	b = jsonesc.Append(b, "chatcmpl-"+a.ID)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = jsonesc.Append(b, a.ModelUsed)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = jsonesc.Append(b, a.Output)
	b = append(b, `,"refusal":null`...)
	if len(a.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range a.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if tc.ID != "" {
				b = append(b, `"id":`...)
				b = jsonesc.Append(b, tc.ID)
				b = append(b, ',')
			}
			b = append(b, `"type":"function","function":{`...)
			if tc.Name != "" {
				b = append(b, `"name":`...)
				b = jsonesc.Append(b, tc.Name)
				b = append(b, ',')
			}
			b = append(b, `"arguments":`...)
			b = jsonesc.Append(b, tc.Arguments)
			b = append(b, '}', '}')
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	b = jsonesc.Append(b, compatFinish(a))
	b = append(b, `,"logprobs":null}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, a.TokensIn, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, a.TokensOut, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, a.TokensIn+a.TokensOut, 10)
	b = append(b, `},"service":`...)
	b = appendServiceInfo(b, a, requested)
	return append(b, '}', '\n')
}

// appendServiceInfo appends serviceInfo(a, requested)'s JSON.
func appendServiceInfo(b []byte, a *Answer, requested string) []byte {
	if requested == "" {
		requested = Router
	}
	b = append(b, `{"id":`...)
	b = jsonesc.Append(b, a.ID)
	b = append(b, `,"provider":`...)
	b = jsonesc.Append(b, a.Provider)
	b = append(b, `,"modelUsed":`...)
	b = jsonesc.Append(b, a.ModelUsed)
	b = append(b, `,"requested":`...)
	b = jsonesc.Append(b, requested)
	if a.FellBackFrom != "" {
		b = append(b, `,"fellBackFrom":`...)
		b = jsonesc.Append(b, a.FellBackFrom)
	}
	b = append(b, `,"cost":`...)
	b = appendDollars(b, Micros(a.Cost))
	b = append(b, `,"costMicros":`...)
	b = strconv.AppendInt(b, int64(a.CostMicros), 10)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, a.Truncated)
	b = append(b, `,"latencyMs":`...)
	b = strconv.AppendInt(b, a.LatencyMs, 10)
	return append(b, '}')
}
