package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

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
	Handler           HandlerFunc
}

// Mount registers routes on mux behind authentication and the permission
// table, and gives unknown /api paths the JSON 404.
func Mount(mux *http.ServeMux, routes []Route, authn Authenticator, log *slog.Logger) {
	for _, rt := range routes {
		mux.Handle(rt.Method+" "+rt.Path, serve(rt, authn, log))
	}
	mux.Handle("/api/", HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return E(KindNotFound, "no_route", "no endpoint %s %s", r.Method, r.URL.Path)
	}).with(log))
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

func serve(rt Route, authn Authenticator, log *slog.Logger) http.Handler {
	limit := rt.MaxBody
	if limit == 0 {
		limit = DefaultMaxBody
	}
	return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !rt.Public {
			p, err := authn.Authenticate(r)
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
			r = r.WithContext(WithPrincipal(r.Context(), p))
		}
		return rt.Handler(w, r)
	}).with(log)
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
