package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestEdgeTokenCommand(t *testing.T) {
	o := testOptions(t)
	db, err := store.Open(context.Background(), filepath.Join(o.data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	var out bytes.Buffer
	if err := edgeToken(context.Background(), []string{"create", "--data", o.data, "--name", "fra-1"}, &out); err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`svc_edge_[a-z0-9]+`).FindString(out.String())
	id := regexp.MustCompile(`edt_[a-z0-9]+`).FindString(out.String())
	if secret == "" || id == "" {
		t.Fatalf("create printed %q", out.String())
	}
	out.Reset()
	if err := edgeToken(context.Background(), []string{"list", "--data", o.data}, &out); err != nil || !strings.Contains(out.String(), "fra-1") || strings.Contains(out.String(), secret) {
		t.Fatalf("list: %v %q", err, out.String())
	}
	if err := edgeToken(context.Background(), []string{"revoke", "--data", o.data, "--id", id}, &out); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"revoke twice", []string{"revoke", "--data", o.data, "--id", id}},
		{"revoke without id", []string{"revoke", "--data", o.data}},
		{"no name", []string{"create", "--data", o.data}},
		{"no database", []string{"list", "--data", t.TempDir()}},
		{"unknown verb", []string{"rotate", "--data", o.data}},
		{"no verb", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := edgeToken(context.Background(), tc.args, &out); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestEdgeTokenCommandPostgres: with --store the command manages the
// tokens of a control plane on PostgreSQL, where there is no platform.db.
func TestEdgeTokenCommandPostgres(t *testing.T) {
	dsn := pgtest.MigratedDSN(t)
	var out bytes.Buffer
	args := []string{"--data", t.TempDir(), "--store", dsn}
	if err := edgeToken(context.Background(), append([]string{"create", "--name", "fra-2"}, args...), &out); err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`edt_[a-z0-9]+`).FindString(out.String())
	out.Reset()
	if err := edgeToken(context.Background(), append([]string{"list"}, args...), &out); err != nil || !strings.Contains(out.String(), id) {
		t.Fatalf("list: %v %q", err, out.String())
	}
	if err := edgeToken(context.Background(), append([]string{"revoke", "--id", id}, args...), &out); err != nil {
		t.Fatal(err)
	}
}
