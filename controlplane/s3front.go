package controlplane

import (
	"net"
	"net/http"
	"strings"

	"github.com/svcplatform/platform/controlplane/buckets"
)

// s3Front sends requests of the storage buckets' S3-compatible surface to
// it ahead of the route table's mux, which would redirect object keys
// holding "//", "." or ".." segments to other paths: /s3/... on the API's
// address, and every path on host (Config.S3Host, when set) for clients
// whose endpoint takes no path.
func s3Front(next http.Handler, b *buckets.Service, host string) http.Handler {
	prefixed, atRoot := b.S3Handler("/s3"), b.S3Handler("")
	host = strings.ToLower(host)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host != "" && requestHost(r) == host {
			atRoot.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/s3" || strings.HasPrefix(r.URL.Path, "/s3/") {
			prefixed.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestHost is the request's host name, lower case, without a port.
func requestHost(r *http.Request) string {
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}
