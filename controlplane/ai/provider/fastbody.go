package provider

import (
	"math"
	"strconv"

	"github.com/svcplatform/platform/internal/jsonesc"
)

// oaFastBody is an OpenAI chat request written by appending its JSON
// (post uses appendJSON instead of encoding/json): the same fields in the
// same order as encoding/json writes for p.body(r, stream), strings
// escaped by jsonesc, so the upstream reads the same JSON value
// (TestFastBody, FuzzFastBody), without building oaRequest or reflecting
// over it. Only
// requests without tools and tool calls, and with a temperature that
// encoding/json writes in plain decimal, take this path (fastBodyOK).
type oaFastBody struct {
	r      *ChatRequest
	stream bool
}

// fastBodyOK tells whether r may be written by oaFastBody.
func fastBodyOK(r *ChatRequest) bool {
	if len(r.Tools) > 0 || r.ToolChoice != "" {
		return false
	}
	for i := range r.Messages {
		if len(r.Messages[i].ToolCalls) > 0 {
			return false
		}
	}
	if t := r.Temperature; t != nil {
		a := math.Abs(*t)
		if math.IsNaN(*t) || (a != 0 && (a < 1e-6 || a >= 1e21)) {
			return false
		}
	}
	return true
}

// appendJSON appends the body and the newline encoding/json's Encoder ends with.
func (b oaFastBody) appendJSON(dst []byte) []byte {
	r := b.r
	dst = append(dst, `{"model":`...)
	dst = jsonesc.Append(dst, r.Model)
	dst = append(dst, `,"messages":[`...)
	first := true
	if r.System != "" {
		dst = append(dst, `{"role":"system","content":`...)
		dst = jsonesc.Append(dst, r.System)
		dst = append(dst, '}')
		first = false
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, `{"role":`...)
		dst = jsonesc.Append(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = jsonesc.Append(dst, m.Content)
		if m.ToolCallID != "" {
			dst = append(dst, `,"tool_call_id":`...)
			dst = jsonesc.Append(dst, m.ToolCallID)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if r.MaxTokens != 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.MaxTokens), 10)
	}
	if r.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, *r.Temperature, 'f', -1, 64)
	}
	if b.stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(dst, '}', '\n')
}
