package ai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
)

// The specification's limits of a chat request.
const (
	// DefaultMaxTokens is max_tokens when the request leaves it out.
	DefaultMaxTokens = 1024
	// MaxTokens is the most output tokens one request may ask for.
	MaxTokens = 8192
	// MaxTokensEdge is the most on the edge-inference models.
	MaxTokensEdge = 2048
	// MaxTemperature is the highest temperature.
	MaxTemperature = 2.0
	// MaxInputChars is the most characters of input (prompt, system and
	// messages together).
	MaxInputChars = 200_000
	// MaxEmbeddingInputs is the most inputs of one embeddings call.
	MaxEmbeddingInputs = 100
	// HistoryDays is how long request history is kept.
	HistoryDays = 30
)

// Defaults of the gateway's own settings.
const (
	DefaultFirstByteTimeout = 30 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultRequestTimeout   = 10 * time.Minute
	DefaultFlushEvery       = time.Second
	DefaultEmbeddingModel   = "bge-base"
)

// builtinProviders are the providers the catalogue refers to, with their
// public endpoints. None has a key: a provider is usable only once the
// --ai-config file configures it.
var builtinProviders = map[string]ProviderConfig{
	"openai":    {Protocol: provider.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1"},
	"anthropic": {Protocol: provider.ProtocolAnthropic, BaseURL: "https://api.anthropic.com"},
	// edge is the platform's own inference: an OpenAI-protocol server
	// (vLLM, llama.cpp, Ollama) the operator runs and names here.
	"edge": {Protocol: provider.ProtocolOpenAI},
}

// ProviderConfig is one provider of the --ai-config file.
type ProviderConfig struct {
	// Protocol is openai or anthropic.
	Protocol string `json:"protocol"`
	// BaseURL is the API root (https://api.openai.com/v1,
	// https://api.anthropic.com); a built-in provider's is used when empty.
	BaseURL string `json:"baseUrl"`
	// APIKey is the key itself; APIKeyEnv names the environment variable
	// holding it instead (read at start).
	APIKey    string `json:"apiKey,omitempty"`
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
}

// Config is the gateway's configuration: the --ai-config file's providers
// and model overrides, and settings the assembly sets.
type Config struct {
	// Providers maps a provider name to its endpoint and key; a name
	// replaces the built-in provider of that name.
	Providers map[string]ProviderConfig `json:"providers"`
	// Models adds or overrides catalogue entries.
	Models []ModelOverride `json:"models,omitempty"`
	// MarkupBasisPoints is added to third-party models' list prices (at
	// most 500, 5 percent; edge models never carry it).
	MarkupBasisPoints int `json:"markupBasisPoints,omitempty"`

	// FirstByteTimeout bounds the wait for an upstream to start answering;
	// past it the router tries the next model.
	FirstByteTimeout time.Duration `json:"-"`
	// IdleTimeout bounds the wait between two pieces of a stream.
	IdleTimeout time.Duration `json:"-"`
	// RequestTimeout bounds one whole upstream call.
	RequestTimeout time.Duration `json:"-"`
	// FlushEvery is how often request history and meters are written.
	FlushEvery time.Duration `json:"-"`
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("ai: configuration")

// LoadConfig reads the --ai-config file: JSON, unknown fields refused, keys
// named by apiKeyEnv read from the environment now.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: read %s: %w", ErrConfig, path, err)
	}
	return ParseConfig(data, os.LookupEnv)
}

// ParseConfig decodes a configuration file's contents; lookup reads the
// environment.
func ParseConfig(data []byte, lookup func(string) (string, bool)) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: data after the JSON object", ErrConfig)
	}
	for name, p := range c.Providers {
		if p.APIKeyEnv != "" {
			if p.APIKey != "" {
				return Config{}, fmt.Errorf("%w: provider %s: set apiKey or apiKeyEnv, not both", ErrConfig, name)
			}
			v, ok := lookup(p.APIKeyEnv)
			if !ok || v == "" {
				return Config{}, fmt.Errorf("%w: provider %s: environment variable %s (apiKeyEnv) is not set", ErrConfig, name, p.APIKeyEnv)
			}
			p.APIKey = v
			c.Providers[name] = p
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Provision fills defaults and the built-in providers' base URLs.
func (c *Config) Provision() {
	if c.FirstByteTimeout == 0 {
		c.FirstByteTimeout = DefaultFirstByteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	for name, p := range c.Providers {
		if b, ok := builtinProviders[name]; ok {
			if p.Protocol == "" {
				p.Protocol = b.Protocol
			}
			if p.BaseURL == "" {
				p.BaseURL = b.BaseURL
			}
			c.Providers[name] = p
		}
	}
}

// Validate reports a configuration that cannot work. It is pure.
func (c Config) Validate() error {
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := c.Providers[name]
		b, builtin := builtinProviders[name]
		proto, base := p.Protocol, p.BaseURL
		if builtin {
			if proto == "" {
				proto = b.Protocol
			}
			if base == "" {
				base = b.BaseURL
			}
		}
		if proto != provider.ProtocolOpenAI && proto != provider.ProtocolAnthropic {
			return fmt.Errorf("%w: provider %s: protocol must be openai or anthropic, not %q", ErrConfig, name, proto)
		}
		if base == "" {
			return fmt.Errorf("%w: provider %s: baseUrl is required", ErrConfig, name)
		}
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: provider %s: baseUrl %q is not an http(s) URL", ErrConfig, name, base)
		}
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("%w: a provider needs a name", ErrConfig)
		}
	}
	if c.MarkupBasisPoints < 0 || c.MarkupBasisPoints > MaxMarkupBasisPoints {
		return fmt.Errorf("%w: markupBasisPoints must be 0 to %d", ErrConfig, MaxMarkupBasisPoints)
	}
	seen := map[string]bool{}
	for _, m := range c.Models {
		if m.ID == "" {
			return fmt.Errorf("%w: a model override needs an id", ErrConfig)
		}
		if seen[m.ID] {
			return fmt.Errorf("%w: model %s appears twice", ErrConfig, m.ID)
		}
		seen[m.ID] = true
	}
	if _, err := buildCatalogue(c.Models); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FirstByteTimeout < 0 || c.IdleTimeout < 0 || c.RequestTimeout < 0 || c.FlushEvery < 0 {
		return fmt.Errorf("%w: timeouts must not be negative", ErrConfig)
	}
	return nil
}
