package provider

import "github.com/svcplatform/platform/controlplane/ai/internal/jsonscan"

// fastAnswer is what a plain (unstreamed) chat completion carries:
//
//	{"id":"…","object":"chat.completion","created":1,"model":"…",
//	 "choices":[{"index":0,"message":{"role":"assistant","content":"…","refusal":null,"annotations":[]},
//	             "logprobs":null,"finish_reason":"stop"}],
//	 "usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{…},…},
//	 "service_tier":"default","system_fingerprint":"…"}
//
// decodeFastAnswer reads such an answer without encoding/json's
// reflection: strings may hold escapes (answers are full of \n and \"),
// which are decoded as encoding/json does. It accepts only that shape,
// exact key spellings, each key once, valid UTF-8, paired surrogates and
// whole-number token counts; anything else (tool calls, a refusal, an
// error object, unknown keys, several choices, null where a value is
// expected) answers ok=false and the caller decodes with encoding/json,
// which then reads the same thing (FuzzFastAnswer checks it).
type fastAnswer struct {
	model      []byte
	content    []byte
	hasContent bool // content is a string (not null or absent)
	finish     []byte
	hasFinish  bool
	usage      bool // usage is an object
	in, out    int64
}

// answerKeys are the keys the fast path knows, by object.
var (
	answerTop     = []string{"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier"}
	answerChoice  = []string{"index", "message", "logprobs", "finish_reason"}
	answerMessage = []string{"role", "content", "refusal", "annotations"}
	answerUsage   = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	answerDetails = []string{"cached_tokens", "audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"}
)

func decodeFastAnswer(data []byte) (fastAnswer, bool) {
	var a fastAnswer
	s := &jsonscan.Scanner{B: data}
	choices := 0
	ok := s.Object(answerTop, func(key string) bool {
		switch key {
		case "id", "object", "system_fingerprint", "service_tier":
			_, _, ok := s.StrOrNull()
			return ok
		case "created":
			_, ok := s.Num()
			return ok
		case "model":
			v, isStr, ok := s.Text()
			if isStr {
				a.model = v
			}
			return ok
		case "usage":
			a.usage = true
			return s.Object(answerUsage, func(key string) bool {
				switch key {
				case "prompt_tokens":
					n, ok := s.Int64()
					a.in = n
					return ok
				case "completion_tokens":
					n, ok := s.Int64()
					a.out = n
					return ok
				case "total_tokens":
					_, ok := s.Int64()
					return ok
				}
				// The details: objects of counts the gateway does not read.
				return s.Object(answerDetails, func(string) bool { _, ok := s.Int64(); return ok })
			})
		case "choices":
			if !s.Eat('[') {
				return false
			}
			choices = 1
			if !answerChoiceOf(s, &a) {
				return false
			}
			return s.Eat(']') // exactly one choice
		}
		return false
	})
	return a, ok && choices == 1 && s.End()
}

func answerChoiceOf(s *jsonscan.Scanner, a *fastAnswer) bool {
	return s.Object(answerChoice, func(key string) bool {
		switch key {
		case "index":
			_, ok := s.Num()
			return ok
		case "logprobs":
			return s.Null()
		case "finish_reason":
			v, isStr, ok := s.Text()
			a.finish, a.hasFinish = v, isStr
			return ok
		case "message":
			return s.Object(answerMessage, func(key string) bool {
				switch key {
				case "role":
					_, _, ok := s.Text()
					return ok
				case "refusal":
					return s.Null()
				case "annotations":
					return s.Eat('[') && s.Eat(']')
				case "content":
					v, isStr, ok := s.Text()
					a.content, a.hasContent = v, isStr
					return ok
				}
				return false
			})
		}
		return false
	})
}
