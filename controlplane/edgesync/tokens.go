package edgesync

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base32"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/store"
)

// Token is an edge credential as listings show it; the secret is shown once
// at minting and only its SHA-256 is kept.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Local     bool      `json:"local"`
	CreatedAt time.Time `json:"createdAt"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// tokenCache holds the hashes of the unrevoked tokens, so a long-poll does
// not cost a database read. A token it does not know triggers a reload (at
// most once a second), so a token minted by another process works at once.
type tokenCache struct {
	mu       sync.RWMutex
	tokens   []cachedToken
	reloaded time.Time
}

type cachedToken struct {
	id   string
	hash [sha256.Size]byte
}

func (c *tokenCache) load(ctx context.Context, q store.Querier, now time.Time) error {
	rows, err := q.QueryContext(ctx, `SELECT id, token_hash FROM edge_tokens WHERE revoked_at = ''`)
	if err != nil {
		return fmt.Errorf("edgesync: tokens: %w", err)
	}
	defer rows.Close()
	var ts []cachedToken
	for rows.Next() {
		var t cachedToken
		var h []byte
		if err := rows.Scan(&t.id, &h); err != nil {
			return fmt.Errorf("edgesync: tokens: %w", err)
		}
		copy(t.hash[:], h)
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("edgesync: tokens: %w", err)
	}
	c.mu.Lock()
	c.tokens, c.reloaded = ts, now
	c.mu.Unlock()
	return nil
}

// match compares h with every known hash in constant time and returns the
// token id.
func (c *tokenCache) match(h [sha256.Size]byte) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, found := "", 0
	for _, t := range c.tokens {
		if subtle.ConstantTimeCompare(t.hash[:], h[:]) == 1 {
			id, found = t.id, 1
		}
	}
	return id, found == 1
}

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func hashToken(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// MintToken creates an edge token named name in db and returns its secret,
// shown once. The `platform` command line offers it to operators for remote
// edges (`platform edge --edge-token`); a running control plane accepts the
// token at once.
func MintToken(ctx context.Context, db *store.DB, name string, now time.Time) (string, Token, error) {
	return mint(ctx, db, name, false, now)
}

func mint(ctx context.Context, db *store.DB, name string, local bool, now time.Time) (string, Token, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", Token{}, fmt.Errorf("edgesync: token name must be 1 to 100 characters")
	}
	var raw [32]byte
	rand.Read(raw[:])
	secret := snapshot.TokenPrefix + strings.ToLower(tokenEncoding.EncodeToString(raw[:]))
	h := hashToken(secret)
	t := Token{ID: store.NewID("edt"), Name: name, Local: local, CreatedAt: now}
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		if local {
			if _, err := tx.ExecContext(ctx, `UPDATE edge_tokens SET revoked_at = ? WHERE local = 1 AND revoked_at = ''`, store.FormatTime(now)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO edge_tokens(id, name, token_hash, local, created_at) VALUES (?,?,?,?,?)`,
			t.ID, name, h[:], local, store.FormatTime(now))
		return err
	})
	if err != nil {
		return "", Token{}, fmt.Errorf("edgesync: mint token: %w", err)
	}
	return secret, t, nil
}

// EnsureLocalToken mints the token of the in-process edge of `platform
// serve`, revoking the one of the previous start (only hashes are kept, so
// the secret cannot be shown again).
func (s *Service) EnsureLocalToken(ctx context.Context) (string, error) {
	secret, _, err := mint(ctx, s.db, "local edge", true, s.clock.Now())
	if err != nil {
		return "", err
	}
	return secret, s.tokens.load(ctx, s.db, s.clock.Now())
}

// MintToken creates a token for a remote edge and returns its secret, shown
// once.
func (s *Service) MintToken(ctx context.Context, name string) (string, Token, error) {
	secret, t, err := MintToken(ctx, s.db, name, s.clock.Now())
	if err != nil {
		return "", Token{}, err
	}
	s.log.Info("edge token minted", "id", t.ID, "name", t.Name)
	return secret, t, s.tokens.load(ctx, s.db, s.clock.Now())
}

// RevokeToken revokes an edge token: its edge is refused from the next
// request on.
func (s *Service) RevokeToken(ctx context.Context, id string) error {
	if err := RevokeToken(ctx, s.db, id, s.clock.Now()); err != nil {
		return err
	}
	s.log.Info("edge token revoked", "id", id)
	return s.tokens.load(ctx, s.db, s.clock.Now())
}

// RevokeToken revokes the edge token id in db. A running control plane
// refuses it within TokenRecheck.
func RevokeToken(ctx context.Context, db *store.DB, id string, now time.Time) error {
	res, err := db.ExecContext(ctx, `UPDATE edge_tokens SET revoked_at = ? WHERE id = ? AND revoked_at = ''`, store.FormatTime(now), id)
	if err != nil {
		return fmt.Errorf("edgesync: revoke: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("edgesync: revoke %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Tokens lists the edge tokens, newest first.
func (s *Service) Tokens(ctx context.Context) ([]Token, error) { return Tokens(ctx, s.db) }

// Tokens lists the edge tokens in db, newest first.
func Tokens(ctx context.Context, db *store.DB) ([]Token, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, name, local, created_at, revoked_at FROM edge_tokens ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("edgesync: tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		var t Token
		var created, revoked string
		if err := rows.Scan(&t.ID, &t.Name, &t.Local, &created, &revoked); err != nil {
			return nil, fmt.Errorf("edgesync: tokens: %w", err)
		}
		t.CreatedAt, t.RevokedAt = store.ParseTime(created), store.ParseTime(revoked)
		out = append(out, t)
	}
	return out, rows.Err()
}

// authenticate returns the id of the edge token the request carries.
func (s *Service) authenticate(r *http.Request) (string, bool) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !strings.HasPrefix(secret, snapshot.TokenPrefix) || len(secret) > 200 {
		return "", false
	}
	h := hashToken(secret)
	s.tokens.mu.RLock()
	now := s.clock.Now()
	age := now.Sub(s.tokens.reloaded)
	s.tokens.mu.RUnlock()
	if age > TokenRecheck {
		// Revocations made by another process (platform edge-token revoke)
		// apply within TokenRecheck.
		if err := s.tokens.load(r.Context(), s.db, now); err != nil {
			return "", false
		}
		age = 0
	}
	if id, ok := s.tokens.match(h); ok {
		return id, true
	}
	if age > time.Second && s.tokens.load(r.Context(), s.db, now) == nil {
		return s.tokens.match(h)
	}
	return "", false
}

// TokenRecheck is how long a token list read from the database is trusted:
// a token revoked by another process is refused within it.
const TokenRecheck = 30 * time.Second
