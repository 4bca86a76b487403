package forward

import (
	"fmt"
	"net"
	"net/url"
)

// ParseBase reads an origin's base URL: http or https with a host,
// and the host:port to dial (the scheme's port when none is given).
func ParseBase(base string) (*url.URL, string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("origin %q is not an http(s) base URL", base)
	}
	hostPort := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		hostPort = net.JoinHostPort(u.Hostname(), port)
	}
	return u, hostPort, nil
}
