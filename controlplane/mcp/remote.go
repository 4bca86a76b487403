package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// forwarded are the only request headers Remote sends on.
var forwarded = []string{"Authorization", HeaderVia, "Content-Type", "Accept"}

// ErrBadURL is returned by ParseControlPlaneURL for an address that is not
// an http or https URL of a host.
var ErrBadURL = errors.New("mcp: control plane address must be an http:// or https:// URL of a host")

// ParseControlPlaneURL checks a control plane address (e.g.
// http://127.0.0.1:7070) and returns it without path, query or fragment.
func ParseControlPlaneURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %q", ErrBadURL, raw)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// Remote is an http.Handler that serves each connector call by sending it
// to the control plane at base (stdio mode: `platform mcp --controlplane`).
// Only the key, the connector mark and the content headers are sent; the
// answer's status and JSON body come back as they are.
func Remote(base *url.URL, client *http.Client) http.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return remote{base: base, client: client}
}

type remote struct {
	base   *url.URL
	client *http.Client
}

func (rm remote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := *rm.base
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), r.Body)
	if err != nil {
		api.WriteError(w, r, nil, api.Internal(fmt.Errorf("mcp: remote request: %w", err)))
		return
	}
	for _, h := range forwarded {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := rm.client.Do(req)
	if err != nil {
		api.WriteError(w, r, nil, api.E(api.KindBadGateway, "controlplane_unreachable",
			"the control plane at %s did not answer: %v", rm.base, errors.Unwrap(err)))
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, maxAnswer+1))
}
