package wasm

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Request is the HTTP request handed to a function. The edge fills it from
// the visitor's request; Body is read whole (bounded by MaxRequestBytes).
type Request struct {
	// Method is the HTTP method, e.g. GET.
	Method string
	// Host is the request's host (the Host header), with an optional port.
	Host string
	// Path is the URL path as sent (escaped), e.g. /api/items%2F1.
	Path string
	// RawQuery is the query string without '?'.
	RawQuery string
	// Header holds the request headers (canonical keys).
	Header http.Header
	// Body is the request body.
	Body []byte
	// RemoteAddr is the visitor's address, ip or ip:port.
	RemoteAddr string
	// HTTPS reports that the visitor used TLS.
	HTTPS bool
}

// Response is what a function answered.
type Response struct {
	// Status is the HTTP status (200 unless the function sent Status).
	Status int
	// Header holds the response headers, without hop-by-hop ones.
	Header http.Header
	// Body is the response body.
	Body []byte
}

// hopHeaders are never copied from a function's answer: the edge frames
// the response itself.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Content-Length", "Status"}

// cgiEnv returns the environment of one call as KEY=value strings: the
// deployment's pinned variables, then the request's CGI meta-variables
// (which win over a variable of the same name), then SERVICE_PROJECT_ID,
// which nothing overrides. The result is sorted for reproducibility.
func cgiEnv(pinned map[string]string, project string, r *Request) []string {
	keys, env := cgiVars(pinned, project, r)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + env[k]
	}
	return out
}

// cgiVars is cgiEnv's environment as a map and its sorted keys, without
// the names and values an environment cannot hold ('=' in a name, NUL).
func cgiVars(pinned map[string]string, project string, r *Request) ([]string, map[string]string) {
	env := make(map[string]string, len(pinned)+20+len(r.Header))
	for k, v := range pinned {
		env[k] = v
	}
	host, port := r.Host, ""
	if h, p, err := net.SplitHostPort(r.Host); err == nil {
		host, port = h, p
	}
	if port == "" {
		port = "80"
		if r.HTTPS {
			port = "443"
		}
	}
	remote, remotePort := r.RemoteAddr, ""
	if h, p, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		remote, remotePort = h, p
	}
	uri := r.Path
	if r.RawQuery != "" {
		uri += "?" + r.RawQuery
	}
	env["GATEWAY_INTERFACE"] = "CGI/1.1"
	env["SERVER_PROTOCOL"] = "HTTP/1.1"
	env["SERVER_SOFTWARE"] = "platform"
	env["SERVER_NAME"] = host
	env["SERVER_PORT"] = port
	env["REQUEST_METHOD"] = r.Method
	env["SCRIPT_NAME"] = ""
	env["PATH_INFO"] = r.Path
	env["QUERY_STRING"] = r.RawQuery
	env["REQUEST_URI"] = uri
	env["REMOTE_ADDR"] = remote
	env["REMOTE_HOST"] = remote
	env["CONTENT_LENGTH"] = strconv.Itoa(len(r.Body))
	env["CONTENT_TYPE"] = r.Header.Get("Content-Type")
	env["HTTP_HOST"] = r.Host
	if remotePort != "" {
		env["REMOTE_PORT"] = remotePort
	}
	if r.HTTPS {
		env["HTTPS"] = "on"
	}
	for k, vs := range r.Header {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		// Content-Type and -Length have their own variables; Proxy is the
		// httpoxy header (a function's HTTP client would read it as
		// HTTP_PROXY).
		if ck == "Content-Type" || ck == "Content-Length" || ck == "Proxy" || ck == "Host" {
			continue
		}
		name := "HTTP_" + strings.Map(envRune, ck)
		env[name] = strings.Join(vs, ", ")
	}
	env["SERVICE_PROJECT_ID"] = project
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if strings.ContainsRune(k, '=') || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			continue // not representable in an environment
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, env
}

func envRune(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return r - 'a' + 'A'
	case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return r
	default:
		return '_'
	}
}

// ParseResponse parses a function's stdout as a CGI response (RFC 3875
// section 6): header lines, a blank line, the body. "Status: 404 Not Found"
// sets the status (default 200, or 302 with a Location and no Status).
// Output without a header block or with an invalid header is an error
// wrapping ErrBadResponse.
func ParseResponse(out []byte) (*Response, error) {
	src := bytes.NewReader(out)
	// A buffer no larger than the output: a small answer does not cost
	// bufio's default 4 KiB.
	br := bufio.NewReaderSize(src, min(len(out), 4096))
	tp := textproto.NewReader(br)
	mh, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("%w: header block: %v", ErrBadResponse, err)
	}
	if len(mh) == 0 {
		return nil, fmt.Errorf("%w: no header lines before the blank line (want at least Content-Type or Status)", ErrBadResponse)
	}
	h := http.Header(mh)
	status := http.StatusOK
	if s := h.Get("Status"); s != "" {
		code, _, _ := strings.Cut(strings.TrimSpace(s), " ")
		n, err := strconv.Atoi(code)
		if err != nil || len(code) != 3 || n < 100 || n > 599 {
			return nil, fmt.Errorf("%w: status %q is not a three-digit HTTP status", ErrBadResponse, s)
		}
		status = n
	} else if h.Get("Location") != "" {
		status = http.StatusFound
	}
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("%w: header name %q is not a token", ErrBadResponse, k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("%w: header %s holds a control character", ErrBadResponse, k)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	consumed := len(out) - src.Len() - br.Buffered()
	body := out[consumed:]
	return &Response{Status: status, Header: h, Body: body}, nil
}
