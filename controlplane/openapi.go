package controlplane

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// The OpenAPI document is generated from the route table and the Go types
// of each route's bodies, so it cannot drift from what the server does.

var openapiOnce struct {
	sync.Once
	doc []byte
}

func (cp *ControlPlane) serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	openapiOnce.Do(func() { openapiOnce.doc, _ = json.MarshalIndent(OpenAPI(cp.routes), "", "  ") })
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiOnce.doc)
	return nil
}

var pathParam = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// OpenAPI builds the OpenAPI 3.1 document of routes.
func OpenAPI(routes []api.Route) map[string]any {
	schemas := map[string]any{}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		op := map[string]any{
			"summary":     rt.Summary,
			"operationId": operationID(rt),
			"responses":   errorResponses(rt),
		}
		if rt.Op != "" {
			op["x-permission"] = string(rt.Op)
		}
		if rt.Public {
			op["security"] = []any{}
		}
		// A trailing wildcard {name...} (the rest of the path, slashes
		// included) is written {name} in OpenAPI.
		path := strings.ReplaceAll(rt.Path, "...}", "}")
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, in := range []struct {
			where string
			ps    []api.Param
		}{{"query", rt.Query}, {"header", rt.Headers}} {
			for _, p := range in.ps {
				typ := p.Type
				if typ == "" {
					typ = "string"
				}
				params = append(params, map[string]any{"name": p.Name, "in": in.where, "required": p.Required,
					"description": p.Description, "schema": map[string]any{"type": typ}})
			}
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.Request != nil || len(rt.RequestBodies) > 0 {
			content := map[string]any{}
			if rt.Request != nil {
				content = jsonContent(schemaOf(reflect.TypeOf(rt.Request), schemas))
			}
			addRaw(content, rt.RequestBodies)
			op["requestBody"] = map[string]any{"required": true, "content": content}
		}
		ok := map[string]any{"description": "success"}
		if rt.Response != nil || len(rt.ResponseBodies) > 0 {
			content := map[string]any{}
			if rt.Response != nil {
				content = jsonContent(schemaOf(reflect.TypeOf(rt.Response), schemas))
			}
			addRaw(content, rt.ResponseBodies)
			ok["content"] = content
		}
		status := rt.Status
		if status == 0 {
			status = http.StatusOK
		}
		op["responses"].(map[string]any)[strconv.Itoa(status)] = ok
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(rt.Method)] = op
	}
	schemas["Error"] = map[string]any{
		"type": "object", "required": []string{"error"},
		"properties": map[string]any{"error": map[string]any{
			"type": "object", "required": []string{"code", "message"},
			"properties": map[string]any{
				"code":    map[string]any{"type": "string", "description": "stable machine-readable code"},
				"message": map[string]any{"type": "string", "description": "what went wrong, for a person"},
			},
			"additionalProperties": true,
		}},
	}
	return map[string]any{
		"openapi": "3.1.0",
		"servers": []any{map[string]any{"url": "/", "description": "this control plane: the API listener (--api-addr); paths start with /api"}},
		"info": map[string]any{
			"title":       "Platform API",
			"version":     "1",
			"description": "The control-plane REST API. Every call carries Authorization: Bearer <API key> unless marked otherwise.",
		},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"schemas": schemas,
			"responses": map[string]any{
				"Error": map[string]any{"description": "the one error shape: {error: {code, message, ...}}", "content": jsonContent(map[string]any{"$ref": "#/components/schemas/Error"})},
			},
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
}

// errorResponses lists the error answers an operation can give, each with
// the one error schema: 400 for a body or parameters, 401 and 403 behind
// credentials, 404 for a resource in the path, 409 and 413 for changes,
// 429 everywhere authenticated (rate limits), 500, and default for the
// rest (402, 410, 501, 502, 503 of particular areas).
func errorResponses(rt api.Route) map[string]any {
	ref := map[string]any{"$ref": "#/components/responses/Error"}
	out := map[string]any{"400": ref, "500": ref, "default": ref}
	if !rt.Public {
		out["401"], out["403"], out["429"] = ref, ref, ref
	}
	if strings.Contains(rt.Path, "{") {
		out["404"] = ref
	}
	if rt.Method != http.MethodGet {
		out["409"], out["413"] = ref, ref
	}
	return out
}

func operationID(rt api.Route) string {
	id := strings.ToLower(rt.Method)
	for _, part := range strings.Split(strings.TrimPrefix(rt.Path, "/api/"), "/") {
		part = strings.Trim(part, "{}")
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "-", ""), ".", "")
		id += strings.ToUpper(part[:1]) + part[1:]
	}
	return id
}

// addRaw adds bodies that are not JSON, by content type: bytes
// (format binary), described.
func addRaw(content map[string]any, bodies map[string]string) {
	for ctype, desc := range bodies {
		schema := map[string]any{"type": "string", "description": desc}
		if !strings.HasPrefix(ctype, "text/") {
			schema["format"] = "binary"
		}
		content[ctype] = map[string]any{"schema": schema}
	}
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

var timeType = reflect.TypeOf(time.Time{})

// schemaOf returns the JSON schema of t, registering named structs in schemas.
func schemaOf(t reflect.Type, schemas map[string]any) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t.Implements(reflect.TypeOf((*interface{ MarshalText() ([]byte, error) })(nil)).Elem()) {
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), schemas)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": nullableIfPointer(t.Elem(), schemaOf(t.Elem(), schemas))}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := schemaName(t, schemas)
		if name == "" {
			return structSchema(t, schemas)
		}
		if _, ok := schemas[name]; !ok {
			schemas[name] = map[string]any{} // placeholder against recursion
			schemas[name] = structSchema(t, schemas)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// schemaOwners remembers which Go type each component name stands for, so
// that two areas' types of one name (billing.Answer, ...) get two schemas.
var schemaOwners sync.Map // schema name -> reflect.Type

// schemaName names t's component schema: its Go name, generics spelled
// Page[pkg.Session] -> PageOfSession, prefixed with its package's name
// when another type took the plain name first.
func schemaName(t reflect.Type, schemas map[string]any) string {
	name := t.Name()
	if name == "" {
		return ""
	}
	if base, args, ok := strings.Cut(name, "["); ok {
		var b strings.Builder
		b.WriteString(base)
		for _, a := range strings.Split(strings.TrimSuffix(args, "]"), ",") {
			a = a[strings.LastIndexAny(a, "./")+1:]
			b.WriteString("Of" + a)
		}
		name = b.String()
	}
	if owner, loaded := schemaOwners.LoadOrStore(name, t); loaded && owner.(reflect.Type) != t {
		pkg := t.PkgPath()
		return pkg[strings.LastIndex(pkg, "/")+1:] + "." + name
	}
	return name
}

func structSchema(t reflect.Type, schemas map[string]any) map[string]any {
	props := map[string]any{}
	var required []string
	// Fields of an embedded struct without a json name are written at this
	// level by encoding/json; this struct's own fields win a clash.
	promoted := map[string]any{}
	var promotedRequired []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if ft := f.Type; f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				inner := structSchema(ft, schemas)
				for k, v := range inner["properties"].(map[string]any) {
					promoted[k] = v
				}
				if req, ok := inner["required"].([]string); ok && f.Type.Kind() != reflect.Pointer {
					promotedRequired = append(promotedRequired, req...)
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop := schemaOf(f.Type, schemas)
		if !strings.Contains(opts, "omitempty") {
			// A pointer without omitempty is written as null when nil.
			prop = nullableIfPointer(f.Type, prop)
		}
		// A doc tag describes what the field means, where its name and
		// type do not say enough (after refunds or before, in which unit).
		if doc := f.Tag.Get("doc"); doc != "" {
			described := make(map[string]any, len(prop)+1)
			for k, v := range prop {
				described[k] = v
			}
			described["description"] = doc
			prop = described
		}
		props[name] = prop
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
			required = append(required, name)
		}
	}
	for k, v := range promoted {
		if _, own := props[k]; !own {
			props[k] = v
		}
	}
	for _, k := range promotedRequired {
		if !slices.Contains(required, k) {
			required = append(required, k)
		}
	}
	sort.Strings(required)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// nullableIfPointer lets schema s of Go type t be null too when t is a
// pointer (encoding/json writes a nil pointer as null): a type becomes
// [type, "null"], anything else (a $ref, an empty schema) anyOf s or null.
func nullableIfPointer(t reflect.Type, s map[string]any) map[string]any {
	if t.Kind() != reflect.Pointer || len(s) == 0 {
		return s
	}
	if typ, ok := s["type"].(string); ok {
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []any{typ, "null"}
		return out
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
