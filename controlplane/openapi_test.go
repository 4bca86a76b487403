package controlplane_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// TestOpenAPILint checks the OpenAPI document against the rules of
// Redocly's recommended ruleset that are errors there, so `redocly lint`
// finds none: no-empty-servers, path-parameters-defined,
// operation-parameters-unique, operation-operationId-unique,
// operation-summary, operation-4xx-response (with the error schema),
// no-identical-paths, no-path-trailing-slash, no-unresolved-refs and
// security-defined.
func TestOpenAPILint(t *testing.T) {
	env := cptest.New(t)
	raw, err := json.Marshal(controlplane.OpenAPI(env.CP.Routes()))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if s, _ := doc["servers"].([]any); len(s) == 0 {
		t.Error("no-empty-servers: servers is empty")
	}
	schemes, _ := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	param := regexp.MustCompile(`\{([^}]+)\}`)
	opIDs := map[string]string{}
	shapes := map[string]string{}
	paths := doc["paths"].(map[string]any)
	for path, item := range paths {
		if len(path) > 1 && strings.HasSuffix(path, "/") {
			t.Errorf("no-path-trailing-slash: %s", path)
		}
		shape := param.ReplaceAllString(path, "{}")
		if other, dup := shapes[shape]; dup {
			t.Errorf("no-identical-paths: %s and %s", path, other)
		}
		shapes[shape] = path
		inPath := map[string]bool{}
		for _, m := range param.FindAllStringSubmatch(path, -1) {
			inPath[m[1]] = true
		}
		for method, o := range item.(map[string]any) {
			op := o.(map[string]any)
			name := strings.ToUpper(method) + " " + path
			t.Run(name, func(t *testing.T) {
				if s, _ := op["summary"].(string); s == "" {
					t.Error("operation-summary: no summary")
				}
				id, _ := op["operationId"].(string)
				if prev, dup := opIDs[id]; id == "" || dup {
					t.Errorf("operation-operationId-unique: %q (also %s)", id, prev)
				}
				opIDs[id] = name
				declared := map[string]bool{}
				params, _ := op["parameters"].([]any)
				for _, p := range params {
					p := p.(map[string]any)
					key := p["in"].(string) + ":" + p["name"].(string)
					if declared[key] {
						t.Errorf("operation-parameters-unique: %s", key)
					}
					declared[key] = true
					if p["in"] == "path" && (!inPath[p["name"].(string)] || p["required"] != true) {
						t.Errorf("path-parameters-defined: %s is not a required parameter of the path", p["name"])
					}
				}
				for name := range inPath {
					if !declared["path:"+name] {
						t.Errorf("path-parameters-defined: {%s} has no parameter", name)
					}
				}
				responses := op["responses"].(map[string]any)
				has4xx := false
				for code, r := range responses {
					if !strings.HasPrefix(code, "4") {
						continue
					}
					has4xx = true
					if ref, _ := r.(map[string]any)["$ref"].(string); ref != "#/components/responses/Error" {
						t.Errorf("error response %s is not the error schema: %v", code, r)
					}
				}
				if !has4xx {
					t.Error("operation-4xx-response: no 4xx response")
				}
				if sec, set := op["security"]; set {
					for _, req := range sec.([]any) {
						for s := range req.(map[string]any) {
							if schemes[s] == nil {
								t.Errorf("security-defined: unknown scheme %s", s)
							}
						}
					}
				}
			})
		}
	}
	// no-unresolved-refs: every $ref names a component that exists.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				var cur any = doc
				for _, p := range parts {
					m, _ := cur.(map[string]any)
					cur = m[p]
				}
				if cur == nil {
					t.Errorf("no-unresolved-refs: %s", ref)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
}

// TestOpenAPIFieldDescriptions: a field's doc tag is its description in
// the schema (payment analytics and earnings say fees and net are after
// refunds).
func TestOpenAPIFieldDescriptions(t *testing.T) {
	env := cptest.New(t)
	raw, err := json.Marshal(controlplane.OpenAPI(env.CP.Routes()))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ schema, field, typ, want string }{
		{"Totals", "fee_cents", "integer", "after refunds"},
		{"Totals", "net_cents", "integer", "after fees and refunds"},
		{"DayStats", "net_cents", "integer", "after fees and their refunds"},
		{"Earnings", "fees", "integer", "after refunds"},
		{"Asset", "playable", "boolean", "while processing"},
	} {
		t.Run(tc.schema+"."+tc.field, func(t *testing.T) {
			p := doc.Components.Schemas[tc.schema].Properties[tc.field]
			if d, _ := p["description"].(string); !strings.Contains(d, tc.want) || p["type"] != tc.typ {
				t.Errorf("%v, want type %s and a description saying %q", p, tc.typ, tc.want)
			}
		})
	}
}

// TestOpenAPINullable: a Go pointer written as null when nil is nullable in
// the document: the usage report's totals (null for a metric not measured)
// and a field such as the spending limit.
func TestOpenAPINullable(t *testing.T) {
	env := cptest.New(t)
	raw, err := json.Marshal(controlplane.OpenAPI(env.CP.Routes()))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ schema, prop, want string }{
		{"Report", "totals", `{"additionalProperties":{"type":["number","null"]},"type":"object"}`},
		{"Metrics", "testRuns30d", `{"type":["number","null"]}`},
		{"Measured", "measuredAt", `{"format":"date-time","type":["string","null"]}`},
	} {
		// The field's description (its doc tag) is not what is checked here.
		var prop map[string]json.RawMessage
		if err := json.Unmarshal(doc.Components.Schemas[c.schema].Properties[c.prop], &prop); err != nil {
			t.Fatalf("%s.%s: %v", c.schema, c.prop, err)
		}
		delete(prop, "description")
		if got, _ := json.Marshal(prop); string(got) != c.want {
			t.Errorf("%s.%s = %s, want %s", c.schema, c.prop, got, c.want)
		}
	}
}
