package provider

import "unicode/utf8"

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

type chunkScanner struct {
	b []byte
	i int
}

func (s *chunkScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *chunkScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *chunkScanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes and returns its bytes.
func (s *chunkScanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

// strOrNull reads a string (true) or null (false, ok).
func (s *chunkScanner) strOrNull() (v []byte, isStr, ok bool) {
	if s.peek() == 'n' {
		return nil, false, s.lit("null")
	}
	v, ok = s.str()
	return v, ok, ok
}

func (s *chunkScanner) lit(l string) bool {
	if len(s.b)-s.i < len(l) || string(s.b[s.i:s.i+len(l)]) != l {
		return false
	}
	s.i += len(l)
	return true
}

// num reads a JSON number.
func (s *chunkScanner) num() bool {
	s.ws()
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// object reads {"key": value, ...}, calling field for each key; field
// reads the value and says whether it was acceptable. Keys must differ.
func (s *chunkScanner) object(field func(key string) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	var seen [8]string
	n := 0
	for {
		k, ok := s.str()
		if !ok || !s.eat(':') {
			return false
		}
		for _, prev := range seen[:n] {
			if prev == string(k) {
				return false
			}
		}
		key := knownKey(k)
		if key == "" || n == len(seen) {
			return false
		}
		seen[n] = key
		n++
		if !field(key) {
			return false
		}
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// knownKey returns the constant spelling of a key the fast path knows
// (no allocation), or "".
func knownKey(k []byte) string {
	for _, c := range [...]string{"id", "object", "created", "model", "system_fingerprint", "service_tier", "choices",
		"index", "delta", "role", "content", "finish_reason", "logprobs", "usage", "refusal"} {
		if string(k) == c {
			return c
		}
	}
	return ""
}

func decodeFastChunk(data []byte) (fastChunk, bool) {
	var c fastChunk
	s := &chunkScanner{b: data}
	ok := s.object(func(key string) bool {
		switch key {
		case "id", "object", "system_fingerprint", "service_tier":
			_, _, ok := s.strOrNull()
			return ok
		case "created":
			return s.num()
		case "model":
			v, isStr, ok := s.strOrNull()
			if isStr {
				c.model = v
			}
			return ok
		case "usage":
			return s.peek() == 'n' && s.lit("null")
		case "choices":
			if !s.eat('[') {
				return false
			}
			if s.eat(']') {
				return true
			}
			c.choices = 1
			if !s.choice(&c) {
				return false
			}
			return s.eat(']') // exactly one choice
		}
		return false
	})
	s.ws()
	return c, ok && s.i == len(s.b)
}

func (s *chunkScanner) choice(c *fastChunk) bool {
	return s.object(func(key string) bool {
		switch key {
		case "index":
			return s.num()
		case "logprobs":
			return s.peek() == 'n' && s.lit("null")
		case "finish_reason":
			v, isStr, ok := s.strOrNull()
			c.finish, c.hasFinish = v, isStr
			return ok
		case "delta":
			return s.object(func(key string) bool {
				switch key {
				case "role":
					_, _, ok := s.strOrNull()
					return ok
				case "refusal":
					return s.peek() == 'n' && s.lit("null")
				case "content":
					v, isStr, ok := s.strOrNull()
					c.content, c.hasContent = v, isStr
					return ok
				}
				return false
			})
		}
		return false
	})
}
