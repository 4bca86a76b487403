package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/api"
)

// Path is where the Streamable HTTP transport is mounted on the API address.
const Path = "/api/mcp"

// MaxRequestBody bounds one MCP message over HTTP: a push_files call at the
// REST push's limits (25 MB of files, base64 and JSON overhead).
const MaxRequestBody = 64 << 20

// headerRemote carries the assistant's address from the HTTP transport to
// the tool calls it makes (set by Handler, whatever the client sent).
const headerRemote = "X-Connector-Remote-Addr"

// Config configures the connector; the zero value works.
type Config struct {
	// Tools are the tools offered (Tools() when nil).
	Tools []Tool `json:"-"`
	// Version is the server version the connector reports.
	Version string `json:"version"`
}

// Deps are what the connector is built on.
type Deps struct {
	// API serves every tool call: the control plane's API handler in
	// process, or Remote for a control plane elsewhere (required).
	API http.Handler
	// Authn, when set, checks the API key of every HTTP transport request
	// before any MCP traffic (a bad key is 401 at once). Without it the
	// transport only requires a bearer key and each tool call's REST
	// request checks it.
	Authn api.Authenticator
	// Logger receives transport errors (discarded when nil); never keys.
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	if d.API == nil {
		return fmt.Errorf("%w: API", ErrNotConfigured)
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("mcp: missing dependencies")

// Provision fills defaults.
func (c *Config) Provision() {
	if c.Tools == nil {
		c.Tools = Tools()
	}
	if c.Version == "" {
		c.Version = "1"
	}
}

// Instructions is what the connector tells an assistant at initialize: the
// areas its tools cover and the rule every call follows.
const Instructions = "Tools of the hosting platform's workspace. " +
	"Repos: list them, create one, push a full snapshot of files as a commit, read files, deploy a commit to a project (an older commit is a rollback). " +
	"Service settings: read and change Shield (country, address and AI-crawler rules, log-only mode, static-site passwords) and the CDN (caching of static sites and its time). " +
	"Security: the security overview (score and checks). " +
	"Attention: the workspace's ranked to-do list (failed or stuck deploys, limits, AI credit and Balance running low, refunds owed, failing webhooks, ...). " +
	"Agents: the tool catalogue, suggestions for an app, create, read, change, pause or resume, delete and run an agent. " +
	"Memory stores: list stores and keys, get, put and delete keys. " +
	"Storage buckets: list buckets and objects, a signed URL for an object, put a small object. " +
	"Sign-in pools: list pools and their app users, disable or enable a user. " +
	"E-mail: send an e-mail as a project, list a project's messages. " +
	"Each call is made with your API key and allowed exactly when the same REST call would be; refusals carry the API's error code."

// Server is the assistant connector: the spec's tools over MCP, each served
// by the REST route it names, with the caller's own key.
type Server struct {
	cfg   Config
	d     Deps
	call  caller
	http  *sdk.Server
	calls *prometheus.CounterVec
}

// New builds the connector.
func New(cfg Config, d Deps) (*Server, error) {
	cfg.Provision()
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, d: d, call: caller{api: d.API},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_mcp_tool_calls_total",
			Help: "Assistant connector tool calls by tool and outcome (ok, refused: the API or the connector refused it, failed: the call could not be made).",
		}, []string{"tool", "outcome"})}
	s.http = s.build(func(req *sdk.CallToolRequest) (string, string) {
		if req.Extra == nil || req.Extra.Header == nil {
			return "", ""
		}
		return req.Extra.Header.Get("Authorization"), req.Extra.Header.Get(headerRemote)
	})
	return s, nil
}

// Collectors are the connector's metrics, for the registry of the process.
func (s *Server) Collectors() []prometheus.Collector { return []prometheus.Collector{s.calls} }

// ToolNames lists the tools offered, in order.
func (s *Server) ToolNames() []string {
	out := make([]string, len(s.cfg.Tools))
	for i, t := range s.cfg.Tools {
		out[i] = t.Def.Name
	}
	return out
}

// credentials returns the Authorization header and remote address a tool
// call is made with.
type credentials func(req *sdk.CallToolRequest) (authorization, remote string)

// build makes an SDK server offering every tool, each served with cred's
// key.
func (s *Server) build(cred credentials) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "platform", Title: "Platform assistant connector", Version: s.cfg.Version},
		&sdk.ServerOptions{
			Instructions: Instructions,
			Logger:       s.d.Logger,
		})
	run := func(ctx context.Context, tool string, req *sdk.CallToolRequest, rq Request) (*sdk.CallToolResult, any, error) {
		authz, remote := cred(req)
		if authz == "" {
			s.calls.WithLabelValues(tool, "refused").Inc()
			res, out := toolResult(refuse(http.StatusUnauthorized, "unauthenticated", "missing credentials: the connector needs an API key").answer())
			return res, out, nil
		}
		a, err := s.call.do(ctx, authz, remote, rq)
		if err != nil {
			s.calls.WithLabelValues(tool, "failed").Inc()
			return nil, nil, err
		}
		outcome := "ok"
		if a.Status >= 400 {
			outcome = "refused"
		}
		s.calls.WithLabelValues(tool, outcome).Inc()
		res, out := toolResult(a)
		return res, out, nil
	}
	for _, t := range s.cfg.Tools {
		t.add(srv, run)
	}
	return srv
}

// Handler is the Streamable HTTP transport, mounted at Path on the API
// address. Every request needs an API key as Authorization: Bearer (401
// otherwise); tool calls are made with that key. Sessions are not kept
// (stateless): each request stands alone, so a key is never reused beyond
// the request that sent it.
func (s *Server) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.http }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: MaxRequestBody,
		Logger:              s.d.Logger,
		// The transport takes bearer keys only, never ambient credentials
		// (cookies), so a DNS-rebound page has nothing to use: the
		// localhost Host check would only break proxies in front.
		DisableLocalhostProtection: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.authenticate(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			api.WriteError(w, r, s.d.Logger, api.AsError(err))
			return
		}
		r.Header.Del("Cookie")
		r.Header.Set(headerRemote, r.RemoteAddr)
		h.ServeHTTP(w, r)
	})
}

// errNoKey is the refusal of a transport request without a bearer key.
var errNoKey = api.E(api.KindUnauthenticated, "", "missing credentials: send Authorization: Bearer <API key>")

// authenticate requires a bearer API key, and checks it when Authn is set.
func (s *Server) authenticate(r *http.Request) error {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return errNoKey
	}
	if s.d.Authn == nil {
		return nil
	}
	p, err := s.d.Authn.Authenticate(r)
	if err != nil {
		return err
	}
	if p == nil {
		return errNoKey
	}
	return nil
}

// Run serves one connection on t (stdio for a desktop assistant) until the
// client leaves or ctx ends; every tool call is made with key.
func (s *Server) Run(ctx context.Context, t sdk.Transport, key string) error {
	authz := "Bearer " + strings.TrimSpace(key)
	srv := s.build(func(*sdk.CallToolRequest) (string, string) { return authz, "" })
	return srv.Run(ctx, t)
}
