package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/svcplatform/platform/edge/localca"
)

// acmeChallengePrefix is the path of ACME http-01 challenges, answered on
// plain HTTP instead of a redirect.
const acmeChallengePrefix = "/.well-known/acme-challenge/"

// setupTLS builds the server TLS configuration: TLS 1.2 and 1.3, ALPN h2
// then http/1.1, with
// certificates from the ACME CA when configured, otherwise from the local
// CA in DataDir/ca.
func (e *Edge) setupTLS() error {
	if a := e.cfg.ACME; a != nil {
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      autocert.DirCache(filepath.Join(e.cfg.DataDir, "acme")),
			HostPolicy: e.acmeHostPolicy,
			Email:      a.Email,
		}
		if a.DirectoryURL != "" {
			m.Client = &acme.Client{DirectoryURL: a.DirectoryURL}
		}
		e.acme = m
		e.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.GetCertificate,
			NextProtos: []string{"h2", "http/1.1", acme.ALPNProto}}
		return nil
	}
	ca, err := localca.Open(filepath.Join(e.cfg.DataDir, "ca"), e.cfg.AppsDomain)
	if err != nil {
		return err
	}
	e.ca = ca
	e.tlsConfig = ca.TLSConfig("h2", "http/1.1")
	return nil
}

// errACMEHost refuses certificates for hosts no site answers at.
var errACMEHost = errors.New("edge: no site answers at this host")

// acmeHostPolicy allows certificates for the hosts of the configuration in
// use only, so nobody can make the edge order certificates for arbitrary
// names.
func (e *Edge) acmeHostPolicy(_ context.Context, host string) error {
	if e.table.Load().lookupHost([]byte(strings.ToLower(host))) == nil {
		return errACMEHost
	}
	return nil
}

// CACertPath returns where the local CA's certificate is, for users to
// trust; empty when certificates come from ACME.
func (e *Edge) CACertPath() string {
	if e.ca == nil {
		return ""
	}
	return e.ca.CertPath
}

// CA returns the local certificate authority, nil under ACME.
func (e *Edge) CA() *localca.CA { return e.ca }
