package buckets

import (
	"net/http"
	"net/url"
)

// requestOrigin is the scheme and host an absolute link in an answer to r
// starts with: the public base URL's when r came to its host (the API's
// address as people reach it, perhaps through a TLS-terminating proxy);
// else r's own host (the S3 host) with the public base URL's scheme, or
// https when r came over TLS.
func (s *Service) requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if u, err := url.Parse(s.cfg.PublicBaseURL); err == nil && u.Host != "" {
		if u.Host == r.Host {
			return s.cfg.PublicBaseURL
		}
		if u.Scheme == "https" {
			scheme = "https"
		}
	}
	return scheme + "://" + r.Host
}
