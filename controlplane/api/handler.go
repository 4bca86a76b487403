package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
)

// HandlerFunc is a handler that returns its error instead of writing it; the
// adapter turns the error into the one JSON error body.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// coded is an error from a lower package that knows its status and code
// without importing this one (auth.Denied is one).
type coded interface {
	error
	Status() int
	ErrorCode() string
}

var kindOfStatus = func() map[int]Kind {
	m := make(map[int]Kind, len(statusOf))
	for k, s := range statusOf {
		m[s] = k
	}
	return m
}()

// AsError converts any error to an *Error: *Error as is, coded errors by
// their status, anything else as internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var c coded
	if errors.As(err, &c) {
		k, ok := kindOfStatus[c.Status()]
		if !ok {
			k = KindInternal
		}
		return &Error{Kind: k, Code: c.ErrorCode(), Message: c.Error()}
	}
	return Internal(err)
}

type ctxKey int

const principalKey ctxKey = iota

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey, p)
}

// PrincipalFrom returns the caller of the request, or nil.
func PrincipalFrom(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey).(*auth.Principal)
	return p
}

// Authorize checks the caller of ctx against the permission table for op on
// a resource of projectID ("" for workspace-wide). Handlers of routes whose
// project is known only after loading the resource call it then.
func Authorize(ctx context.Context, op auth.Op, projectID string) error {
	return auth.Authorize(PrincipalFrom(ctx), op, projectID)
}

// Authenticator turns a request's credentials into a principal. It returns
// (nil, nil) when the request carries none.
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Principal, error)
}

// Route is one row of the API's route table.
type Route struct {
	Method  string
	Path    string // net/http pattern path, e.g. /api/projects/{id}
	Op      auth.Op
	Summary string
	// Public routes need no credentials (sign-in, accepting an invitation).
	Public bool
	// ProjectParam names the path parameter holding the project id the
	// operation acts on; empty when the handler checks the project itself.
	ProjectParam string
	// Status is the success status, for the OpenAPI document (200 when 0).
	Status int
	// MaxBody limits the request body (DefaultMaxBody when 0).
	MaxBody int64
	// Request and Response are example values of the bodies, for the
	// OpenAPI document.
	Request, Response any
	// Query and Headers document the query parameters and request
	// headers the handler reads, for the OpenAPI document.
	Query, Headers []Param
	// RequestBodies documents request bodies other than Request's JSON,
	// by content type (e.g. "application/gzip": "a tar.gz of the files");
	// ResponseBodies documents answers other than Response's JSON with
	// the success status (e.g. "text/event-stream").
	RequestBodies, ResponseBodies map[string]string
	Handler                       HandlerFunc
	// Errors, when set, writes every error of the route in the route's own
	// shape, the refusals of authentication and of the permission table
	// included (the AI gateway's chat-completions-compatible surface);
	// WriteError's shape otherwise.
	Errors func(w http.ResponseWriter, r *http.Request, err error)
}

// Param is a query parameter or request header of a route, for the
// OpenAPI document.
type Param struct {
	Name string
	// Type is the JSON schema type: string (when empty), integer, boolean.
	Type        string
	Description string
	Required    bool
}

// Observer is told of every answered request: the route's pattern (never
// the raw path, so labels stay bounded), the status and the time taken.
type Observer interface {
	ObserveRequest(route string, status int, d time.Duration)
}

// CallRecorder is told of every request an API key made (metering's
// api_key_calls); it must be cheap: it runs on every request.
type CallRecorder interface {
	KeyCall(p *auth.Principal)
}

// MountOptions are what Mount builds the API on.
type MountOptions struct {
	// Authn turns credentials into a principal (required).
	Authn Authenticator
	// Log receives 5xx details.
	Log *slog.Logger
	// Observer, when set, sees every request.
	Observer Observer
	// Calls, when set, counts every authenticated API-key request.
	Calls CallRecorder
}

// HeaderVia names the channel a key's request came through; ViaConnector
// is the assistant connector's (controlplane/mcp sets it on every call).
const (
	HeaderVia    = "X-Service-Via"
	ViaConnector = "connector"
)

// NoRoute is the route label of requests no route matched.
const NoRoute = "no_route"

// Mount registers routes on mux behind authentication and the permission
// table, and gives unknown /api paths the JSON 404.
func Mount(mux *http.ServeMux, routes []Route, o MountOptions) {
	for _, rt := range routes {
		pattern := rt.Method + " " + rt.Path
		mux.Handle(pattern, observe(pattern, o.Observer, serve(rt, o)))
	}
	mux.Handle("/api/", observe(NoRoute, o.Observer, HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return E(KindNotFound, "no_route", "no endpoint %s %s", r.Method, r.URL.Path)
	}).with(o.Log)))
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func observe(route string, o Observer, h http.Handler) http.Handler {
	if o == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			o.ObserveRequest(route, status, time.Since(start))
		}()
		h.ServeHTTP(sw, r)
	})
}

func (h HandlerFunc) with(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeErr(w, r, log, err)
		}
	})
}

func writeErr(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	WriteError(w, r, log, AsError(err))
}

func serve(rt Route, o MountOptions) http.Handler {
	limit := rt.MaxBody
	if limit == 0 {
		limit = DefaultMaxBody
	}
	h := HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !rt.Public {
			p, err := o.Authn.Authenticate(r)
			if err != nil {
				return err
			}
			if p == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
				return E(KindUnauthenticated, "", "missing credentials: send Authorization: Bearer <API key>")
			}
			project := ""
			if rt.ProjectParam != "" {
				project = r.PathValue(rt.ProjectParam)
			} else if p.ProjectID != "" {
				// Checked again by the handler once the resource's project
				// is known; here a project key passes the scope check.
				project = p.ProjectID
			}
			if err := auth.Authorize(p, rt.Op, project); err != nil {
				return err
			}
			if o.Calls != nil && p.KeyID != "" {
				o.Calls.KeyCall(p)
			}
			if r.Header.Get(HeaderVia) == ViaConnector && !p.Session {
				p.Via = ViaConnector
			}
			r = r.WithContext(WithPrincipal(r.Context(), p))
		}
		return rt.Handler(w, r)
	})
	if rt.Errors != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				rt.Errors(w, r, err)
			}
		})
	}
	return h.with(o.Log)
}

// Page reads limit (1..max, default def) and the opaque before/cursor
// parameter of a listing.
func Page(r *http.Request, def, max int, cursorParam string) (limit int, cursor string, err error) {
	limit = def
	if s := r.URL.Query().Get("limit"); s != "" {
		n, perr := strconv.Atoi(s)
		if perr != nil || n < 1 || n > max {
			return 0, "", Invalid("limit must be a whole number from 1 to %d", max)
		}
		limit = n
	}
	return limit, strings.TrimSpace(r.URL.Query().Get(cursorParam)), nil
}

// PathID checks an id that a caller (a tool of the connector or of an
// agent) puts into a route's path, and returns it escaped for the path:
// ids are at most 100 bytes of printable characters without a path, query
// or fragment delimiter, a percent sign, a backslash or a space, and not
// a dot segment. It
// reports false for anything else, so the caller refuses the argument
// instead of calling a route it did not mean.
func PathID(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 100 || v == "." || v == ".." {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c == 0x7f || strings.IndexByte("/?#%\\", c) >= 0 {
			return "", false
		}
	}
	return url.PathEscape(v), true
}
