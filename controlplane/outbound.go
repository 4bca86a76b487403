package controlplane

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/svcplatform/platform/internal/netguard"
)

// outboundClient is the HTTP client for requests to addresses users choose
// (webhooks): its dialer refuses loopback, private and link-local addresses
// and the platform's own listeners, checked on the resolved address at
// connect time, unless the operator allowed private networks.
func outboundClient(allowPrivate bool, own []netip.AddrPort) *http.Client {
	d := netguard.Dialer(allowPrivate, own...)
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		Proxy:               nil,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}}
}
