// Package client is a Go client of the platform's REST API: typed calls
// for workspaces, projects and their variables, repos and pushes (the
// tar.gz and manifest uploads that send only what the server lacks),
// deploys and deployments, and database queries. Every refusal of the API
// ({"error": {"code", "message", ...}}) comes back as an *Error carrying
// its status, code and message.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one call of a Client made by New (uploads of a
// whole push included).
const DefaultTimeout = 5 * time.Minute

// Client calls one control plane's API with one key. It is safe for
// concurrent use.
type Client struct {
	// BaseURL is the API's address, "http://127.0.0.1:7070"; paths start
	// with /api.
	BaseURL string
	// Key is the API key sent as Authorization: Bearer.
	Key string
	// HTTP sends the requests (http.DefaultClient when nil).
	HTTP *http.Client
	// UserAgent is sent with every request when not empty.
	UserAgent string
}

// New returns a client of the API at base (a URL, or host:port for
// http://host:port; a trailing /api is dropped) using key.
func New(base, key string) (*Client, error) {
	u, err := NormalizeURL(base)
	if err != nil {
		return nil, err
	}
	return &Client{BaseURL: u, Key: key, HTTP: &http.Client{Timeout: DefaultTimeout}}, nil
}

// NormalizeURL turns what a person types for the API's address into the
// base URL: "127.0.0.1:7070" is http://127.0.0.1:7070, a trailing "/" or
// "/api" is dropped. Only http and https are accepted.
func NormalizeURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("client: the API address is empty: give it as http://HOST:PORT")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("client: %q is not an API address: give it as http://HOST:PORT or https://HOST", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("client: the API address %q must not carry credentials, a query or a fragment", s)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/api")
	return strings.TrimRight(u.String(), "/"), nil
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// request is one call.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	// body is sent as it is with contentType; json is marshalled instead
	// when body is nil.
	body          io.Reader
	contentLength int64
	contentType   string
	json          any
}

// do sends r and decodes a 2xx answer into out (when not nil); any other
// answer is an *Error.
func (c *Client) do(ctx context.Context, r request, out any) error {
	u := c.BaseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	body, ctype := r.body, r.contentType
	if body == nil && r.json != nil {
		data, err := json.Marshal(r.json)
		if err != nil {
			return fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
		body, ctype = bytes.NewReader(data), "application/json"
		r.contentLength = int64(len(data))
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	if r.contentLength > 0 {
		req.ContentLength = r.contentLength
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return &TransportError{Method: r.method, URL: c.BaseURL + r.path, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &TransportError{Method: r.method, URL: c.BaseURL + r.path, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s %s: the answer is not the expected JSON: %w", r.method, r.path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	return c.do(ctx, request{method: http.MethodGet, path: path}, out)
}

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	return c.do(ctx, request{method: http.MethodPost, path: path, json: in}, out)
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
