package ai

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed catalogue.json
var catalogueJSON []byte

// Model kinds.
const (
	KindChat      = "chat"
	KindEmbedding = "embedding"
)

// Tiers of chat models the router chooses among.
const (
	TierFast     = "fast"
	TierBalanced = "balanced"
	TierDeep     = "deep"
)

// Router is the model id of the router and its alias.
const (
	Router      = "service-1"
	RouterAlias = "auto"
)

// Model is one catalogue entry.
type Model struct {
	// ID is the platform's name of the model.
	ID string `json:"id"`
	// Kind is chat or embedding.
	Kind string `json:"kind"`
	// Provider names the configured provider that serves it.
	Provider string `json:"provider"`
	// Upstream is the provider's own name of the model (ID when empty).
	Upstream string `json:"upstream,omitempty"`
	// Tier is fast, balanced or deep (chat models).
	Tier string `json:"tier,omitempty"`
	// Family groups models of one maker (the temperature cap is per family).
	Family string `json:"family,omitempty"`
	// Edge marks the platform's own inference (never marked up; at most
	// 2,048 output tokens).
	Edge bool `json:"edge"`
	// ThirdParty marks a vendor model served by someone other than its
	// maker; it carries the platform's markup.
	ThirdParty bool `json:"thirdParty,omitempty"`
	// InputPerMTok and OutputPerMTok are list prices per million tokens.
	InputPerMTok  PerMTok `json:"inputPerMTok"`
	OutputPerMTok PerMTok `json:"outputPerMTok"`
	// PriceDate is when the list prices were taken (YYYY-MM-DD).
	PriceDate string `json:"priceDate,omitempty"`
	// TemperatureMax is the family's temperature cap (2 when unset).
	TemperatureMax float64 `json:"temperatureMax,omitempty"`
	// Enabled tells whether the model is on unless a workspace admin
	// switches it; a model off by default must be enabled by an admin.
	Enabled bool `json:"enabled"`
	// Dimensions is the vector length of an embedding model.
	Dimensions int `json:"dimensions,omitempty"`
}

// upstream is the name sent to the provider.
func (m *Model) upstream() string {
	if m.Upstream != "" {
		return m.Upstream
	}
	return m.ID
}

// maxTokens is the most output tokens the model may be asked for.
func (m *Model) maxTokens() int {
	if m.Edge {
		return MaxTokensEdge
	}
	return MaxTokens
}

// temperatureMax is the family's cap.
func (m *Model) temperatureMax() float64 {
	if m.TemperatureMax <= 0 || m.TemperatureMax > MaxTemperature {
		return MaxTemperature
	}
	return m.TemperatureMax
}

// ModelOverride adds or changes a catalogue entry from the --ai-config file;
// fields left out keep the catalogue's value.
type ModelOverride struct {
	ID             string   `json:"id"`
	Kind           *string  `json:"kind,omitempty"`
	Provider       *string  `json:"provider,omitempty"`
	Upstream       *string  `json:"upstream,omitempty"`
	Tier           *string  `json:"tier,omitempty"`
	Family         *string  `json:"family,omitempty"`
	Edge           *bool    `json:"edge,omitempty"`
	ThirdParty     *bool    `json:"thirdParty,omitempty"`
	InputPerMTok   *PerMTok `json:"inputPerMTok,omitempty"`
	OutputPerMTok  *PerMTok `json:"outputPerMTok,omitempty"`
	PriceDate      *string  `json:"priceDate,omitempty"`
	TemperatureMax *float64 `json:"temperatureMax,omitempty"`
	Enabled        *bool    `json:"enabled,omitempty"`
	Dimensions     *int     `json:"dimensions,omitempty"`
}

// Catalogue is the list of models, in the router's fallback order.
type Catalogue struct {
	models []*Model
	byID   map[string]*Model
}

// maxPrice bounds a list price: a thousand dollars per million tokens.
const maxPrice = PerMTok(1000 * MicrosPerDollar)

// DefaultCatalogue returns the committed catalogue.
func DefaultCatalogue() (*Catalogue, error) { return buildCatalogue(nil) }

func buildCatalogue(overrides []ModelOverride) (*Catalogue, error) {
	var file struct {
		Comment string   `json:"_comment"`
		Models  []*Model `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(catalogueJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("ai: catalogue.json: %w", err)
	}
	c := &Catalogue{byID: map[string]*Model{}}
	for _, m := range file.Models {
		if m.Kind == "" {
			m.Kind = KindChat
		}
		c.add(m)
	}
	for _, o := range overrides {
		m, ok := c.byID[o.ID]
		if !ok {
			m = &Model{ID: o.ID, Kind: KindChat}
			c.add(m)
		}
		o.apply(m)
	}
	for _, m := range c.models {
		if err := m.validate(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalogue) add(m *Model) {
	c.models = append(c.models, m)
	c.byID[m.ID] = m
}

func (o *ModelOverride) apply(m *Model) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&m.Kind, o.Kind)
	set(&m.Provider, o.Provider)
	set(&m.Upstream, o.Upstream)
	set(&m.Tier, o.Tier)
	set(&m.Family, o.Family)
	set(&m.PriceDate, o.PriceDate)
	if o.Edge != nil {
		m.Edge = *o.Edge
	}
	if o.ThirdParty != nil {
		m.ThirdParty = *o.ThirdParty
	}
	if o.InputPerMTok != nil {
		m.InputPerMTok = *o.InputPerMTok
	}
	if o.OutputPerMTok != nil {
		m.OutputPerMTok = *o.OutputPerMTok
	}
	if o.TemperatureMax != nil {
		m.TemperatureMax = *o.TemperatureMax
	}
	if o.Enabled != nil {
		m.Enabled = *o.Enabled
	}
	if o.Dimensions != nil {
		m.Dimensions = *o.Dimensions
	}
}

func (m *Model) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("ai: model %q: %s", m.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case m.ID == "" || m.ID == Router || m.ID == RouterAlias:
		return bad("id must be set and not %s or %s", Router, RouterAlias)
	case m.Provider == "":
		return bad("provider is required")
	case m.InputPerMTok < 0 || m.InputPerMTok > maxPrice || m.OutputPerMTok < 0 || m.OutputPerMTok > maxPrice:
		return bad("prices must be 0 to 1000 dollars per million tokens")
	case m.TemperatureMax < 0 || m.TemperatureMax > MaxTemperature:
		return bad("temperatureMax must be 0 to 2")
	}
	switch m.Kind {
	case KindChat:
		if m.Tier != TierFast && m.Tier != TierBalanced && m.Tier != TierDeep {
			return bad("tier must be fast, balanced or deep, not %q", m.Tier)
		}
	case KindEmbedding:
		if m.Dimensions < 1 || m.Dimensions > 4096 {
			return bad("an embedding model needs dimensions from 1 to 4096")
		}
	default:
		return bad("kind must be chat or embedding, not %q", m.Kind)
	}
	return nil
}

// Get returns the model called id.
func (c *Catalogue) Get(id string) (*Model, bool) {
	m, ok := c.byID[id]
	return m, ok
}

// Models returns every model in fallback order.
func (c *Catalogue) Models() []*Model { return c.models }
