package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/svcplatform/platform/controlplane/store"
)

// defaultDataDir is the data directory when --data is not given:
// PLATFORM_DATA, else ./data.
func defaultDataDir() string {
	if d := os.Getenv("PLATFORM_DATA"); d != "" {
		return d
	}
	return "./data"
}

// openControlPlaneDB opens the control plane's database: dsn (PostgreSQL)
// when given, else data's SQLite file, which must exist (an operator's
// command never creates one).
func openControlPlaneDB(ctx context.Context, data, dsn string) (*store.DB, error) {
	path := dsn
	if path == "" {
		path = filepath.Join(data, "platform.db")
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no control-plane database at %s (run it on the control plane's machine, or pass --data or --store)", path)
			}
			return nil, err
		}
	}
	return store.Open(ctx, path)
}
