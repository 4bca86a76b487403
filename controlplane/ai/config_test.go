package ai

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/internal/jsonesc"
)

func TestLoadConfig(t *testing.T) {
	env := map[string]string{"OPENAI_KEY": "sk-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct {
		name, body, err string
	}{
		{"minimal", `{"providers":{"openai":{"protocol":"openai","apiKeyEnv":"OPENAI_KEY"}}}`, ""},
		{"edge provider and a new model", `{"providers":{"edge":{"protocol":"openai","baseUrl":"http://127.0.0.1:8080/v1"}},
			"models":[{"id":"qwen-7b","provider":"edge","tier":"fast","inputPerMTok":0.1,"outputPerMTok":"0.2","edge":true,"enabled":true},
			{"id":"gpt-4o","enabled":false,"inputPerMTok":2.75}]}`, ""},
		{"unknown field", `{"providers":{},"extra":1}`, "unknown field"},
		{"unknown provider field", `{"providers":{"openai":{"protocol":"openai","key":"x"}}}`, "unknown field"},
		{"missing env", `{"providers":{"openai":{"apiKeyEnv":"NOPE"}}}`, "NOPE"},
		{"bad protocol", `{"providers":{"x":{"protocol":"grpc","baseUrl":"https://x"}}}`, "protocol"},
		{"custom provider without baseUrl", `{"providers":{"groq":{"protocol":"openai"}}}`, "baseUrl"},
		{"bad tier", `{"models":[{"id":"m","provider":"openai","tier":"huge","inputPerMTok":1,"outputPerMTok":1}]}`, "tier"},
		{"float price with too many decimals", `{"models":[{"id":"gpt-4o","inputPerMTok":0.0000001}]}`, "six decimals"},
		{"embedding without dimensions", `{"models":[{"id":"e","kind":"embedding","provider":"edge","inputPerMTok":1,"outputPerMTok":0}]}`, "dimensions"},
		{"markup above 5 percent", `{"markupBasisPoints":501}`, "markup"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.body), lookup)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err %v, want one naming %q (%+v)", err, c.err, cfg)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "ai.json")
	os.WriteFile(path, []byte(`{"providers":{"anthropic":{"apiKey":"sk-a"}},"models":[{"id":"claude-opus-4-1","enabled":true}]}`), 0o600)
	cfg, err := LoadConfig(path)
	if err != nil || cfg.Providers["anthropic"].APIKey != "sk-a" {
		t.Fatalf("%+v %v", cfg, err)
	}
	cat, err := buildCatalogue(cfg.Models)
	if m, _ := cat.Get("claude-opus-4-1"); err != nil || !m.Enabled || m.InputPerMTok != PerMTok(15*MicrosPerDollar) {
		t.Fatalf("override: %+v %v", m, err)
	}
}

func TestCatalogue(t *testing.T) {
	c, err := DefaultCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[string]int{}
	for _, m := range c.Models() {
		if m.PriceDate == "" {
			t.Errorf("%s has no price date", m.ID)
		}
		tiers[m.Tier]++
	}
	if tiers[TierFast] == 0 || tiers[TierBalanced] == 0 || tiers[TierDeep] == 0 {
		t.Fatalf("tiers %v", tiers)
	}
	for id, dims := range map[string]int{"bge-small": 384, "bge-base": 768, "bge-large": 1024} {
		if m, ok := c.Get(id); !ok || m.Dimensions != dims || m.Kind != KindEmbedding {
			t.Fatalf("%s: %+v", id, m)
		}
	}
}

func TestMoney(t *testing.T) {
	cases := []struct {
		in, out   string
		tin, tout int64
		bp        int
		want      Micros
	}{
		{"0.40", "1.60", 1200, 345, 0, 1032},
		{"0.40", "1.60", 11, 3, 0, 10},                           // 9.2 rounds up once
		{"3", "15", 1_000_000, 1_000_000, 0, 18_000_000},         // 18 dollars exactly
		{"1", "1", 1, 0, 500, 2},                                 // 1.05 micro-dollars -> 2
		{"1000", "1000", 1 << 40, 1 << 40, 500, 210_000_000_000}, // clamped at 1e8 tokens each, no overflow
		{"0", "0", 5, 5, 0, 0},
		{"1000000", "1000000", 1 << 40, 1 << 40, 500, MaxCost}, // at most what the ledger takes in one movement
	}
	for _, c := range cases {
		in, _ := ParseDollars(c.in)
		out, _ := ParseDollars(c.out)
		if got := Cost(PerMTok(in), PerMTok(out), c.tin, c.tout, c.bp); got != c.want {
			t.Errorf("Cost(%s, %s, %d, %d, %d) = %d, want %d", c.in, c.out, c.tin, c.tout, c.bp, got, c.want)
		}
	}
	for s, want := range map[string]Micros{"0.15": 150_000, "15": 15_000_000, ".5": 500_000, "0.000001": 1, "2.500000": 2_500_000} {
		if got, err := ParseDollars(s); err != nil || got != want {
			t.Errorf("ParseDollars(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", ".", "-1", "1e3", "0.0000001", "abc", "1.2.3", "2000000"} {
		if _, err := ParseDollars(s); !errors.Is(err, ErrBadAmount) {
			t.Errorf("ParseDollars(%q) accepted", s)
		}
	}
	if MaxCost != Micros(billing.MaxAmount) {
		t.Fatalf("MaxCost %d, the ledger's largest movement %d", MaxCost, billing.MaxAmount)
	}
	b, _ := json.Marshal(struct{ C USD }{USD(1234)})
	if string(b) != `{"C":0.001234}` {
		t.Fatalf("%s", b)
	}
}

func FuzzParseDollars(f *testing.F) {
	for _, s := range []string{"0.15", "15", "1.000001", "", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseDollars(s)
		if err != nil {
			return
		}
		if m < 0 || m > maxDollars*MicrosPerDollar+MicrosPerDollar {
			t.Fatalf("%q -> %d", s, m)
		}
		back, err := ParseDollars(m.String())
		if err != nil || back != m {
			t.Fatalf("%q -> %d -> %q -> %d", s, m, m.String(), back)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"providers":{"openai":{"protocol":"openai","apiKey":"x"}},"models":[{"id":"a","provider":"openai","tier":"fast","inputPerMTok":1,"outputPerMTok":2}]}`))
	f.Add([]byte(`{"models":[{"id":"e","kind":"embedding","dimensions":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, func(string) (string, bool) { return "k", true })
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config fails validation: %v", err)
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"plain", "quote\" back\\ nl\n", "\x00\x1f", "\u2028", "\xff\xfe", "héllo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := jsonesc.Append(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want, _ := json.Marshal(s)
		var w string
		json.Unmarshal(want, &w)
		if back != w {
			t.Fatalf("%q: got %q want %q", s, back, w)
		}
	})
}

func FuzzChatRequest(f *testing.F) {
	f.Add([]byte(`{"prompt":"hi","max_tokens":5}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req ChatRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		in, err := req.input("", SurfaceChat)
		if err != nil {
			return
		}
		validateChat(&in)
	})
}

// The upstream client keeps enough idle connections per provider host and
// keeps the caller's dial policy; another kind of RoundTripper is kept as is.
func TestUpstreamClient(t *testing.T) {
	dial := (&net.Dialer{}).DialContext
	for _, tc := range []struct {
		name  string
		in    *http.Client
		tuned bool
	}{
		{"default transport", &http.Client{}, true},
		{"own transport", &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 2}}, true},
		{"other round tripper", &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, own := upstreamClient(tc.in)
			if !tc.tuned {
				if c != tc.in || own != nil {
					t.Fatal("a RoundTripper that is not an *http.Transport must be used unchanged")
				}
				return
			}
			tr, ok := c.Transport.(*http.Transport)
			if !ok || tr != own || tr.MaxIdleConnsPerHost < MaxIdleUpstreamConns || c == tc.in {
				t.Fatalf("transport %#v", c.Transport)
			}
			if in, ok := tc.in.Transport.(*http.Transport); ok && (tr.DialContext == nil || in.MaxIdleConnsPerHost != 2) {
				t.Fatal("the dial policy must be kept and the caller's transport left unchanged")
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
