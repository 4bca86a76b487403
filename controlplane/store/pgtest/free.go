package pgtest

import (
	"fmt"

	"github.com/svcplatform/platform/internal/freeport"
)

// freePort picks a free TCP port on the loopback address (package freeport).
func freePort() (int, error) {
	p, err := freeport.Port()
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	return p, nil
}
