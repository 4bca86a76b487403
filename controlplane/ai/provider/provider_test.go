package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
)

func newProvider(t *testing.T, proto string) (provider.Provider, *upstreamtest.Server) {
	t.Helper()
	var s *upstreamtest.Server
	if proto == provider.ProtocolOpenAI {
		s = upstreamtest.NewOpenAI()
	} else {
		s = upstreamtest.NewAnthropic()
	}
	s.Key = "k"
	t.Cleanup(s.Close)
	p, err := provider.New(provider.Config{Name: proto, Protocol: proto, BaseURL: s.BaseURL(), APIKey: "k", HTTP: &http.Client{},
		FirstByteTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func req() *provider.ChatRequest {
	return &provider.ChatRequest{Model: "m", System: "sys", MaxTokens: 50, Messages: []provider.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []provider.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "42"},
	}, Tools: []provider.Tool{{Name: "f", Parameters: []byte(`{"type":"object"}`)}}, ToolChoice: "auto"}
}

func TestProtocols(t *testing.T) {
	for _, proto := range []string{provider.ProtocolOpenAI, provider.ProtocolAnthropic} {
		t.Run(proto, func(t *testing.T) {
			ctx := context.Background()
			p, s := newProvider(t, proto)
			s.Set("m", upstreamtest.Reply{Text: "hello there", InputTokens: 7, OutputTokens: 2,
				ToolCalls: []upstreamtest.ToolCall{{ID: "c2", Name: "f", Arguments: `{"b":2}`}}})
			r, err := p.Chat(ctx, req())
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != "hello there" || r.FinishReason != provider.FinishToolCalls || r.Usage != (provider.Usage{InputTokens: 7, OutputTokens: 2, Reported: true}) ||
				len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"b":2}` {
				t.Fatalf("%+v", r)
			}
			st, err := p.Stream(ctx, req())
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for {
				d, err := st.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(d.Text)
			}
			res := st.Result()
			if text.String() != "hello there" || res.Text != "hello there" || !res.Usage.Reported || res.Usage.InputTokens != 7 || res.ToolCalls[0].Arguments != `{"b":2}` {
				t.Fatalf("%q %+v", text.String(), res)
			}
			// The tool result went upstream in the vendor's shape.
			body := s.Calls()[0].Body
			msgs, _ := body["messages"].([]any)
			if proto == provider.ProtocolAnthropic && (body["system"] != "sys" || len(msgs) != 3) {
				t.Fatalf("anthropic body %v", body)
			}
			if proto == provider.ProtocolOpenAI && len(msgs) != 4 {
				t.Fatalf("openai body %v", body)
			}
		})
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		name  string
		reply upstreamtest.Reply
		kind  error
		retry bool
	}{
		{"429", upstreamtest.Reply{Status: 429, RetryAfter: 7}, provider.ErrRateLimited, true},
		{"500", upstreamtest.Reply{Status: 500}, provider.ErrServer, true},
		{"529 overloaded", upstreamtest.Reply{Status: 529, ErrorCode: "overloaded_error"}, provider.ErrServer, true},
		{"bad key", upstreamtest.Reply{Status: 401}, provider.ErrAuth, true},
		{"context too long", upstreamtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"}, provider.ErrTooLong, false},
		{"refusal", upstreamtest.Reply{Refuse: true}, provider.ErrRefused, false},
		{"bad request", upstreamtest.Reply{Status: 400, ErrorCode: "invalid_request_error"}, provider.ErrBadRequest, false},
		{"hung", upstreamtest.Reply{Hang: true}, provider.ErrUnreachable, true},
	}
	for _, proto := range []string{provider.ProtocolOpenAI, provider.ProtocolAnthropic} {
		for _, c := range cases {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				p, s := newProvider(t, proto)
				s.Set("m", c.reply)
				for _, stream := range []bool{false, true} {
					var err error
					if stream {
						var st provider.Stream
						st, err = p.Stream(context.Background(), req())
						for err == nil {
							_, err = st.Next()
						}
						if err == io.EOF {
							err = nil
						}
					} else {
						_, err = p.Chat(context.Background(), req())
					}
					if !errors.Is(err, c.kind) || provider.Retryable(err) != c.retry {
						t.Fatalf("stream=%v: %v, want %v", stream, err, c.kind)
					}
					var pe *provider.Error
					if c.reply.RetryAfter > 0 && (!errors.As(err, &pe) || pe.RetryAfter != 7*time.Second) {
						t.Fatalf("retry-after lost: %v", err)
					}
				}
			})
		}
	}
}

func TestCutAndStalledStreams(t *testing.T) {
	for _, proto := range []string{provider.ProtocolOpenAI, provider.ProtocolAnthropic} {
		for _, rep := range []upstreamtest.Reply{
			{Chunks: []string{"a", "b", "c"}, CutAfter: 2},
			{Chunks: []string{"a", "b"}, ChunkDelay: 2 * time.Second},
		} {
			p, s := newProvider(t, proto)
			s.Set("m", rep)
			st, err := p.Stream(context.Background(), req())
			if err != nil {
				t.Fatal(err)
			}
			for err == nil {
				_, err = st.Next()
			}
			if !errors.Is(err, provider.ErrUnreachable) {
				t.Fatalf("%s: %v", proto, err)
			}
			if st.Result().Text == "" {
				t.Fatalf("%s: partial text lost", proto)
			}
			st.Close()
		}
	}
}

func TestEmbed(t *testing.T) {
	p, s := newProvider(t, provider.ProtocolOpenAI)
	s.Set("e", upstreamtest.Reply{Dimensions: 8, InputTokens: 3})
	out, err := p.Embed(context.Background(), "e", []string{"a", "b", "c"})
	if err != nil || len(out.Vectors) != 3 || len(out.Vectors[2]) != 8 || out.Usage.InputTokens != 3 {
		t.Fatalf("%+v %v", out, err)
	}
	a, _ := newProvider(t, provider.ProtocolAnthropic)
	if _, err := a.Embed(context.Background(), "e", []string{"a"}); !errors.Is(err, provider.ErrNoEmbeddings) {
		t.Fatalf("anthropic embed: %v", err)
	}
}
