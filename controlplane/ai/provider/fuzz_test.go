package provider

import (
	"bytes"
	"testing"
)

// FuzzSSEReader feeds arbitrary bytes to the event reader: it must never
// panic, never return more than MaxEventBytes, and end with an error.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: delta\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(": comment\r\ndata: x\r\ndata: y\r\n\r\n"))
	f.Add([]byte("data"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewSSEReader(bytes.NewReader(in))
		for i := 0; i <= len(in)+1; i++ {
			_, data, err := r.Next()
			if err != nil {
				return
			}
			if len(data) > MaxEventBytes {
				t.Fatalf("event of %d bytes", len(data))
			}
		}
		t.Fatal("reader did not end")
	})
}

// FuzzOpenAIStream runs arbitrary upstream bytes through the OpenAI stream
// decoder: no panic, and the stream always ends.
func FuzzOpenAIStream(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"delta":{"content":"hi","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte(`data: {"choices":[{"delta":{"tool_calls":[{"index":99999999}]}}]}` + "\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &oaStream{name: "f", c: fakeCall(in), sse: NewSSEReader(bytes.NewReader(in))}
		for i := 0; i < len(in)+2; i++ {
			if _, err := s.Next(); err != nil {
				s.Result()
				return
			}
		}
	})
}

// FuzzAnthropicStream does the same for Anthropic Messages events.
func FuzzAnthropicStream(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"data: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &anStream{name: "f", c: fakeCall(in), sse: NewSSEReader(bytes.NewReader(in)), blocks: map[int]int{}}
		for i := 0; i < len(in)+2; i++ {
			if _, err := s.Next(); err != nil {
				s.Result()
				return
			}
		}
	})
}
