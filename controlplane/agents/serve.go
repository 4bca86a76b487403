package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/internal/jsonesc"
)

// HeaderVia marks the REST requests a run's tools make; ViaAgent is its value.
const (
	HeaderVia = "X-Service-Via"
	ViaAgent  = "agent"
)

// maxToolBody bounds an API answer read back from a tool call.
const maxToolBody = 4 << 20

// serve makes rq through the API's own handler with the run's key.
func serve(ctx context.Context, h http.Handler, secret string, rq toolRequest) (int, []byte, error) {
	var body []byte
	if rq.Body != nil {
		var err error
		if body, err = json.Marshal(rq.Body); err != nil {
			return 0, nil, fmt.Errorf("agents: encode %s %s: %w", rq.Method, rq.Path, err)
		}
	}
	u := &url.URL{Path: rq.Path, RawQuery: rq.Query.Encode()}
	req, err := http.NewRequestWithContext(ctx, rq.Method, u.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("agents: build %s %s: %w", rq.Method, rq.Path, err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set(HeaderVia, ViaAgent)
	req.Header.Set("Accept", "application/json")
	if rq.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = "127.0.0.1:0"
	status, out, err := api.ServeInProcess(h, req, maxToolBody)
	if err != nil {
		return 0, nil, fmt.Errorf("agents: %s %s: %w", rq.Method, rq.Path, err)
	}
	return status, out, nil
}

// jsonEscape renders s for the inside of a JSON string.
func jsonEscape(s string) string {
	b := jsonesc.Append(nil, s)
	return string(b[1 : len(b)-1])
}
