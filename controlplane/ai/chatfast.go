package ai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/ai/internal/jsonscan"
	"github.com/svcplatform/platform/controlplane/api"
)

// The chat request's body is read into a pooled buffer and, when it has
// the plain shape ({model?, messages: [{role, content: "…"}] | prompt,
// system?, max_tokens?, temperature?, tier?, stream?, projectId?}, exact
// key spellings, each once), decoded by hand; anything else (tools, text
// parts, null, unknown or differently spelled keys, invalid UTF-8) goes to
// api.DecodeBytes, which decides as before. FuzzDecodeChatFast checks that
// whatever the fast path accepts, api.DecodeBytes reads identically.

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept for reuse.
const maxPooledBody = 256 << 10

// decodeChat reads r's body into req.
func decodeChat(r *http.Request, req *ChatRequest) error {
	return decodePooled(r, req, decodeChatFast, func(b []byte, req *ChatRequest) error {
		return api.DecodeBytes(b, req, false)
	})
}

// decodePooled reads r's body into a pooled buffer and decodes it with
// fast, or with slow when fast does not take it.
func decodePooled[T any](r *http.Request, dst *T, fast func([]byte) (T, bool), slow func([]byte, *T) error) error {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodyBufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if asMaxBytes(err, &mbe) {
			return api.E(api.KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return api.Invalid("reading request body: %v", err)
	}
	if v, ok := fast(buf.Bytes()); ok {
		*dst = v
		return nil
	}
	return slow(buf.Bytes(), dst)
}

var (
	chatKeys    = []string{"model", "messages", "prompt", "system", "max_tokens", "temperature", "tier", "stream", "projectId"}
	messageKeys = []string{"role", "content"}
)

// decodeChatFast decodes the plain shape of a chat request. Nothing in the
// result points into data.
func decodeChatFast(data []byte) (ChatRequest, bool) {
	var r ChatRequest
	s := &jsonscan.Scanner{B: data}
	text := func(dst *string) bool { return scanText(s, dst) }
	ok := s.Object(chatKeys, func(key string) bool {
		switch key {
		case "model":
			return text(&r.Model)
		case "system":
			return text(&r.System)
		case "tier":
			return text(&r.Tier)
		case "projectId":
			return text(&r.ProjectID)
		case "prompt":
			var p string
			r.Prompt = &p
			return text(&p)
		case "max_tokens":
			n, ok := s.Int64()
			m := int(n)
			r.MaxTokens = &m
			return ok
		case "temperature":
			f, ok := s.Float64()
			r.Temperature = &f
			return ok
		case "stream":
			v, ok := s.Bool()
			r.Stream = v
			return ok
		case "messages":
			var ok bool
			r.Messages, ok = scanMessages(s)
			return ok
		}
		return false
	})
	return r, ok && s.End()
}

// plainString reads a JSON string token without escapes or control
// characters, in valid UTF-8, as encoding/json would (ok false otherwise).
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range body {
		if c == '"' || c == '\\' || c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// scanText reads a JSON string into dst; null or another type is
// encoding/json's to decide (false).
func scanText(s *jsonscan.Scanner, dst *string) bool {
	v, isStr, ok := s.Text()
	if !isStr {
		return false
	}
	*dst = string(v)
	return ok
}

// scanMessages reads a messages array of {role, content: "..."} objects,
// each content kept as its JSON string (quotes and escapes included), as
// MessageIn holds it. Nothing in the result points into the scanner's
// bytes.
func scanMessages(s *jsonscan.Scanner) ([]MessageIn, bool) {
	if !s.Eat('[') {
		return nil, false
	}
	out := []MessageIn{}
	if s.Eat(']') {
		return out, true
	}
	for {
		var m MessageIn
		if !s.Object(messageKeys, func(key string) bool {
			if key == "role" {
				return scanText(s, &m.Role)
			}
			s.WS()
			start := s.I
			if _, isStr, ok := s.Text(); !isStr || !ok {
				return false
			}
			m.Content = bytes.Clone(s.B[start:s.I])
			return true
		}) {
			return nil, false
		}
		out = append(out, m)
		if s.Eat(']') {
			return out, true
		}
		if !s.Eat(',') {
			return nil, false
		}
	}
}
