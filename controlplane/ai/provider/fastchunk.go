package provider

import "github.com/svcplatform/platform/controlplane/ai/internal/jsonscan"

// fastChunk is what a plain streamed chat-completion chunk carries:
//
//	{"id":"…","object":"chat.completion.chunk","created":1,"model":"…",
//	 "choices":[{"index":0,"delta":{"role":"assistant","content":"…"},"finish_reason":null}]}
//
// decodeFastChunk reads such a chunk without encoding/json and without
// allocating (text and model point into data). It accepts only that
// shape, exact key spellings, each key once, valid UTF-8 and strings
// without escapes; anything else (tool calls, a refusal, usage, an error,
// escapes, unknown keys) answers ok=false and the caller decodes with
// encoding/json, which then gives the same result (FuzzFastChunk).
type fastChunk struct {
	model      []byte // nil when absent or null
	choices    int    // 0 or 1
	content    []byte
	hasContent bool // content is a string (not null or absent)
	finish     []byte
	hasFinish  bool // finish_reason is a string
}

// Keys of a plain chunk, by object.
var (
	chunkTop    = []string{"id", "object", "created", "model", "system_fingerprint", "service_tier", "choices", "usage"}
	chunkChoice = []string{"index", "delta", "logprobs", "finish_reason"}
	chunkDelta  = []string{"role", "content", "refusal"}
)

func decodeFastChunk(data []byte) (fastChunk, bool) {
	var c fastChunk
	s := &jsonscan.Scanner{B: data}
	ok := s.Object(chunkTop, func(key string) bool {
		switch key {
		case "id", "object", "system_fingerprint", "service_tier":
			_, _, ok := s.StrOrNull()
			return ok
		case "created":
			_, ok := s.Num()
			return ok
		case "model":
			v, isStr, ok := s.StrOrNull()
			if isStr {
				c.model = v
			}
			return ok
		case "usage":
			return s.Null()
		case "choices":
			if !s.Eat('[') {
				return false
			}
			if s.Eat(']') {
				return true
			}
			c.choices = 1
			if !chunkChoiceOf(s, &c) {
				return false
			}
			return s.Eat(']') // exactly one choice
		}
		return false
	})
	return c, ok && s.End()
}

func chunkChoiceOf(s *jsonscan.Scanner, c *fastChunk) bool {
	return s.Object(chunkChoice, func(key string) bool {
		switch key {
		case "index":
			_, ok := s.Num()
			return ok
		case "logprobs":
			return s.Null()
		case "finish_reason":
			v, isStr, ok := s.StrOrNull()
			c.finish, c.hasFinish = v, isStr
			return ok
		case "delta":
			return s.Object(chunkDelta, func(key string) bool {
				switch key {
				case "role":
					_, _, ok := s.StrOrNull()
					return ok
				case "refusal":
					return s.Null()
				case "content":
					v, isStr, ok := s.StrOrNull()
					c.content, c.hasContent = v, isStr
					return ok
				}
				return false
			})
		}
		return false
	})
}
