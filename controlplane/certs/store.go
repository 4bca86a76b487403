package certs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// getCA reads the stored CA: its certificate and sealed key, or
// store.ErrNotFound.
func getCA(ctx context.Context, q store.Querier) (certPEM, keySealed []byte, err error) {
	var c string
	err = q.QueryRowContext(ctx, `SELECT cert_pem, key_sealed FROM cert_authority WHERE id = 1`).Scan(&c, &keySealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, store.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("certs: ca: %w", err)
	}
	return []byte(c), keySealed, nil
}

// insertCA stores a CA unless one is there already: the first of replicas
// racing at their first start wins.
func insertCA(ctx context.Context, tx *sql.Tx, certPEM, keySealed []byte, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO cert_authority(id, cert_pem, key_sealed, created_at) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, string(certPEM), keySealed, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("certs: insert ca: %w", err)
	}
	return nil
}

// leaf is a stored host certificate.
type leaf struct {
	chainPEM  string
	keySealed []byte
	notAfter  time.Time
}

func getLeaf(ctx context.Context, q store.Querier, host string) (leaf, bool, error) {
	var l leaf
	var na string
	err := q.QueryRowContext(ctx, `SELECT chain_pem, key_sealed, not_after FROM cert_leaves WHERE host = ?`, host).Scan(&l.chainPEM, &l.keySealed, &na)
	if errors.Is(err, sql.ErrNoRows) {
		return leaf{}, false, nil
	}
	if err != nil {
		return leaf{}, false, fmt.Errorf("certs: leaf %s: %w", host, err)
	}
	l.notAfter = store.ParseTime(na)
	return l, true, nil
}

func putLeaf(ctx context.Context, tx *sql.Tx, host string, l leaf, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO cert_leaves(host, chain_pem, key_sealed, not_after, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (host) DO UPDATE SET chain_pem = excluded.chain_pem, key_sealed = excluded.key_sealed,
		not_after = excluded.not_after, created_at = excluded.created_at`,
		host, l.chainPEM, l.keySealed, store.FormatTime(l.notAfter), store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("certs: store leaf %s: %w", host, err)
	}
	return nil
}

// getCache reads a sealed cache value, or ErrCacheMiss.
func getCache(ctx context.Context, q store.Querier, key string) ([]byte, error) {
	var v []byte
	err := q.QueryRowContext(ctx, `SELECT value_sealed FROM cert_cache WHERE cache_key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("certs: cache %s: %w", key, err)
	}
	return v, nil
}

func putCache(ctx context.Context, db *store.DB, key string, sealed []byte, now time.Time) error {
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO cert_cache(cache_key, value_sealed, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (cache_key) DO UPDATE SET value_sealed = excluded.value_sealed, updated_at = excluded.updated_at`,
			key, sealed, store.FormatTime(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("certs: cache put %s: %w", key, err)
	}
	return nil
}

func deleteCache(ctx context.Context, db *store.DB, key string) error {
	if _, err := db.ExecContext(ctx, `DELETE FROM cert_cache WHERE cache_key = ?`, key); err != nil {
		return fmt.Errorf("certs: cache delete %s: %w", key, err)
	}
	return nil
}
