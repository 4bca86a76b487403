package signin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Signing keys. A pool has a current key, which signs, and a next key,
// published in the JWKS before it signs anything, so that apps caching the
// JWKS (up to JWKSMaxAge) already know it when a rotation makes it
// current. A rotated-out key stays published (and accepted by the area)
// until the last token it signed has expired: publish_until is the
// rotation time plus the longest access-token lifetime in force while it
// signed, plus a minute of clock skew.

// Key states.
const (
	keyNext    = "next"
	keyCurrent = "current"
	keyRetired = "retired"
)

// JWKSMaxAge is how long apps may cache a JWKS (its Cache-Control).
const JWKSMaxAge = 5 * time.Minute

// keyRecord is a signing key as stored.
type keyRecord struct {
	ID           string
	Pool         string
	State        string
	Public       []byte // uncompressed P-256 point
	Sealed       []byte // sealed private scalar
	Longest      int    // seconds
	CreatedAt    time.Time
	ActivatedAt  time.Time
	PublishUntil time.Time
}

// privateKey is an unsealed signing key.
type privateKey struct {
	id   string
	pool string
	k    *ecdsa.PrivateKey
}

// maxCachedKeys bounds the unsealed keys kept in memory.
const maxCachedKeys = 10_000

func keyAAD(id, pool string) []byte { return []byte("signin key " + id + " of pool " + pool) }

// newKey generates a P-256 key for pool in state, its private scalar
// sealed.
func (s *Service) newKey(pool, state string, longest int, now time.Time) (keyRecord, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyRecord{}, fmt.Errorf("signin: generate key: %w", err)
	}
	pub, err := k.PublicKey.Bytes()
	if err != nil {
		return keyRecord{}, fmt.Errorf("signin: generate key: %w", err)
	}
	priv, err := k.Bytes()
	if err != nil {
		return keyRecord{}, fmt.Errorf("signin: generate key: %w", err)
	}
	id := store.NewID("sik")
	rec := keyRecord{ID: id, Pool: pool, State: state, Public: pub, Sealed: s.d.Sealer.Seal(priv, keyAAD(id, pool)), Longest: longest, CreatedAt: now}
	if state == keyCurrent {
		rec.ActivatedAt = now
	}
	return rec, nil
}

func insertKey(ctx context.Context, q store.Querier, k keyRecord) error {
	_, err := q.ExecContext(ctx, `INSERT INTO signin_keys(id, pool_id, state, public_key, private_sealed, longest_seconds, created_at, activated_at, publish_until)
		VALUES (?,?,?,?,?,?,?,?,?)`, k.ID, k.Pool, k.State, k.Public, k.Sealed, k.Longest, store.FormatTime(k.CreatedAt),
		timeText(k.ActivatedAt), timeText(k.PublishUntil))
	if err != nil {
		return fmt.Errorf("signin: insert key: %w", err)
	}
	return nil
}

// timeText is t as stored, "" for the zero time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}

const keyCols = `id, pool_id, state, public_key, private_sealed, longest_seconds, created_at, activated_at, publish_until`

func scanKey(sc interface{ Scan(...any) error }) (keyRecord, error) {
	var k keyRecord
	var created, activated, until string
	err := sc.Scan(&k.ID, &k.Pool, &k.State, &k.Public, &k.Sealed, &k.Longest, &created, &activated, &until)
	k.CreatedAt, k.ActivatedAt, k.PublishUntil = store.ParseTime(created), store.ParseTime(activated), store.ParseTime(until)
	return k, err
}

// keysOf returns a pool's keys: the current one, the next one, then the
// retired ones, newest first.
func keysOf(ctx context.Context, q store.Querier, pool string) ([]keyRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+keyCols+` FROM signin_keys WHERE pool_id = ?
		ORDER BY CASE state WHEN ? THEN 0 WHEN ? THEN 1 ELSE 2 END, created_at DESC, id`, pool, keyCurrent, keyNext)
	if err != nil {
		return nil, fmt.Errorf("signin: keys: %w", err)
	}
	defer rows.Close()
	var out []keyRecord
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("signin: keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// published reports whether k is in the JWKS at now.
func (k keyRecord) published(now time.Time) bool {
	return k.State != keyRetired || now.Before(k.PublishUntil)
}

// signingKey returns the pool's current key, unsealed.
func (s *Service) signingKey(ctx context.Context, pool string) (*privateKey, error) {
	k, err := scanKey(s.d.DB.QueryRowContext(ctx, `SELECT `+keyCols+` FROM signin_keys WHERE pool_id = ? AND state = ?`, pool, keyCurrent))
	if err != nil {
		return nil, fmt.Errorf("signin: current key of %s: %w", pool, err)
	}
	s.keysMu.Lock()
	pk := s.keys[k.ID]
	s.keysMu.Unlock()
	if pk != nil {
		return pk, nil
	}
	raw, err := s.d.Sealer.Open(k.Sealed, keyAAD(k.ID, k.Pool))
	if err != nil {
		return nil, fmt.Errorf("signin: open key %s: %w", k.ID, err)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("signin: parse key %s: %w", k.ID, err)
	}
	pk = &privateKey{id: k.ID, pool: k.Pool, k: priv}
	s.keysMu.Lock()
	if len(s.keys) >= maxCachedKeys {
		clear(s.keys)
	}
	s.keys[k.ID] = pk
	s.keysMu.Unlock()
	return pk, nil
}

// verifyingKey returns the public key kid of pool when tokens it signed
// are accepted at now: the current key, or a retired one still published.
func verifyingKey(ctx context.Context, q store.Querier, pool, kid string, now time.Time) (*ecdsa.PublicKey, error) {
	k, err := scanKey(q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM signin_keys WHERE id = ? AND pool_id = ?`, kid, pool))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errToken
	}
	if err != nil {
		return nil, fmt.Errorf("signin: key: %w", err)
	}
	if k.State == keyNext || !k.published(now) {
		return nil, errToken
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), k.Public)
	if err != nil {
		return nil, fmt.Errorf("signin: key %s: %w", kid, err)
	}
	return pub, nil
}

// JWK is one public key of a JWKS (RFC 7517, RFC 7518 6.2).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is a pool's published keys.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

func jwkOf(k keyRecord) JWK {
	return JWK{Kty: "EC", Crv: "P-256", X: b64.EncodeToString(k.Public[1:33]), Y: b64.EncodeToString(k.Public[33:65]), Kid: k.ID, Alg: Alg, Use: "sig"}
}

// JWKS returns the keys pool publishes at now: its current and next keys
// and the retired keys whose tokens may not all have expired.
func (s *Service) JWKS(ctx context.Context, pool string) (JWKS, error) {
	if _, err := s.publicPool(ctx, pool); err != nil {
		return JWKS{}, err
	}
	keys, err := keysOf(ctx, s.d.DB, pool)
	if err != nil {
		return JWKS{}, err
	}
	now := s.now()
	out := JWKS{Keys: []JWK{}}
	for _, k := range keys {
		if k.published(now) && len(k.Public) == 65 {
			out.Keys = append(out.Keys, jwkOf(k))
		}
	}
	return out, nil
}

// rotate makes pool's next key current and retires the current one, which
// stays published until its tokens have expired, and adds a new next key.
// With revoke every earlier key is dropped at once instead (tokens they
// signed stop verifying) and both keys are new.
func (s *Service) rotate(ctx context.Context, tx *sql.Tx, p poolRecord, revoke bool, now time.Time) error {
	keys, err := keysOf(ctx, tx, p.ID)
	if err != nil {
		return err
	}
	var cur, next *keyRecord
	for i := range keys {
		switch keys[i].State {
		case keyCurrent:
			cur = &keys[i]
		case keyNext:
			next = &keys[i]
		}
	}
	if revoke || next == nil {
		if revoke {
			if _, err := tx.ExecContext(ctx, `DELETE FROM signin_keys WHERE pool_id = ?`, p.ID); err != nil {
				return fmt.Errorf("signin: drop keys: %w", err)
			}
			cur = nil
		}
		k, err := s.newKey(p.ID, keyCurrent, p.Settings.AccessTokenSeconds, now)
		if err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
	} else {
		if _, err := tx.ExecContext(ctx, `UPDATE signin_keys SET state = ?, activated_at = ?, longest_seconds = ? WHERE id = ?`,
			keyCurrent, store.FormatTime(now), p.Settings.AccessTokenSeconds, next.ID); err != nil {
			return fmt.Errorf("signin: activate key: %w", err)
		}
	}
	if cur != nil {
		until := now.Add(time.Duration(cur.Longest)*time.Second + clockSkew)
		if _, err := tx.ExecContext(ctx, `UPDATE signin_keys SET state = ?, publish_until = ? WHERE id = ?`,
			keyRetired, store.FormatTime(until), cur.ID); err != nil {
			return fmt.Errorf("signin: retire key: %w", err)
		}
	}
	nk, err := s.newKey(p.ID, keyNext, p.Settings.AccessTokenSeconds, now)
	if err != nil {
		return err
	}
	return insertKey(ctx, tx, nk)
}

// lengthenKeys records that the pool's current key may now sign tokens
// living seconds, so it stays published that long after its rotation.
func lengthenKeys(ctx context.Context, tx *sql.Tx, pool string, seconds int) error {
	_, err := tx.ExecContext(ctx, `UPDATE signin_keys SET longest_seconds = ? WHERE pool_id = ? AND state IN (?, ?) AND longest_seconds < ?`,
		seconds, pool, keyCurrent, keyNext, seconds)
	if err != nil {
		return fmt.Errorf("signin: key lifetimes: %w", err)
	}
	return nil
}

// KeyView is a signing key as the management API shows it (never the
// private key).
type KeyView struct {
	Kid   string `json:"kid"`
	Alg   string `json:"alg"`
	State string `json:"state" doc:"next (published, not signing yet), current (signs new tokens) or retired (published until its tokens expire)"`
	// CreatedAt is when the key was made; ActivatedAt when it began to sign.
	CreatedAt   time.Time  `json:"createdAt"`
	ActivatedAt *time.Time `json:"activatedAt,omitempty"`
	// PublishedUntil is when a retired key leaves the JWKS.
	PublishedUntil *time.Time `json:"publishedUntil,omitempty"`
}

func keyViews(keys []keyRecord, now time.Time) []KeyView {
	out := []KeyView{}
	for _, k := range keys {
		if !k.published(now) {
			continue
		}
		v := KeyView{Kid: k.ID, Alg: Alg, State: k.State, CreatedAt: k.CreatedAt}
		if !k.ActivatedAt.IsZero() {
			t := k.ActivatedAt
			v.ActivatedAt = &t
		}
		if k.State == keyRetired {
			t := k.PublishUntil
			v.PublishedUntil = &t
		}
		out = append(out, v)
	}
	return out
}
