package engine

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// DefaultAPIPort is the loopback port inside a sandboxed program's
// network namespace where the platform's API answers (PLATFORM_API_URL
// http://127.0.0.1:7070).
const DefaultAPIPort = 7070

// APIEnv are the variables holding the API's address as a program
// reaches it.
var APIEnv = []string{"PLATFORM_API_URL", "SERVICE_API_URL"}

// apiBridge forwards a program's requests to the platform's API: only
// /api/ paths, and without the forwarding headers a program could use to
// pass as another client (X-Forwarded-For and the like).
type apiBridge struct {
	target atomic.Pointer[url.URL]
	proxy  *httputil.ReverseProxy
}

func newAPIBridge() *apiBridge {
	b := &apiBridge{}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(b.target.Load())
			for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"} {
				r.Out.Header.Del(h)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			http.Error(w, `{"error":{"code":"api_unreachable","message":"the platform's API did not answer; try again"}}`, http.StatusBadGateway)
		},
	}
	return b
}

func (b *apiBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.target.Load() == nil {
		http.Error(w, `{"error":{"code":"api_unavailable","message":"the platform's API is not reachable from deployments here"}}`, http.StatusServiceUnavailable)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		http.Error(w, `{"error":{"code":"not_found","message":"only /api/ is reachable at this address"}}`, http.StatusNotFound)
		return
	}
	b.proxy.ServeHTTP(w, r)
}

// serve serves a listener inside a program's namespace until it closes.
func (b *apiBridge) serve(ln net.Listener) {
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	_ = srv.Serve(ln)
}

// hostAddr is the API's host:port for a program sharing the host's
// network (sandbox None).
func (b *apiBridge) hostAddr() string {
	u := b.target.Load()
	if u == nil {
		return ""
	}
	return u.Host
}

// bridge is the sandbox.Bridge of the API.
func (b *apiBridge) bridge(port int) sandbox.Bridge {
	return sandbox.Bridge{Port: port, Env: APIEnv, HostAddr: b.hostAddr, Serve: b.serve}
}

// SetAPI makes the platform's API at base (http://127.0.0.1:7070) the
// service programs reach at PLATFORM_API_URL (and SERVICE_API_URL):
// under Bwrap http://127.0.0.1:<Config.APIPort> inside their own network
// namespace, forwarded to base, /api/ paths only; under None base
// itself. Programs started before the call get it on their next start;
// "" or an invalid address removes it.
func (e *Engine) SetAPI(base string) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.api.target.Store(nil)
		return
	}
	e.api.target.Store(&url.URL{Scheme: u.Scheme, Host: u.Host})
}
