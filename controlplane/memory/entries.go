package memory

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Item is a key's value with its metadata and expiry.
type Item struct {
	Value []byte
	// Metadata is compact JSON; "" for none.
	Metadata string
	// ExpiresAt is when the key expires; zero for never.
	ExpiresAt time.Time
}

// Entry is one key of a bulk put: the JSON form of a put.
type Entry struct {
	Key string `json:"key"`
	// Value is the value as text, or standard base64 of its bytes when
	// Base64 is true.
	Value  string `json:"value"`
	Base64 bool   `json:"base64,omitempty"`
	// TTLSeconds, when set, expires the key that many seconds from now (1
	// to MaxTTLSeconds); without it the key does not expire.
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
	// Metadata is any JSON value of at most MaxMetadataBytes.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// BulkPutRequest is the body of PUT /api/memory/{id}/bulk.
type BulkPutRequest struct {
	Entries []Entry `json:"entries"`
}

// Written is one key a put wrote.
type Written struct {
	Key string `json:"key"`
	// Bytes is the value's length.
	Bytes     int        `json:"bytes"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// PutAnswer is the answer of PUT /api/memory/{id}/keys/{key}.
type PutAnswer = Written

// BulkPutAnswer is the answer of PUT /api/memory/{id}/bulk.
type BulkPutAnswer struct {
	Written []Written `json:"written"`
}

// KeysRequest is the body of a bulk get or delete.
type KeysRequest struct {
	Keys []string `json:"keys"`
}

// Value is one key's value in a bulk get.
type Value struct {
	// Value is the value as text when it is UTF-8, else standard base64
	// of its bytes with Base64 true.
	Value     string          `json:"value"`
	Base64    bool            `json:"base64"`
	Metadata  json.RawMessage `json:"metadata"`
	ExpiresAt *time.Time      `json:"expiresAt"`
}

// BulkGetAnswer maps each key asked for to its value, or null when it is
// not there (or expired).
type BulkGetAnswer struct {
	Values map[string]*Value `json:"values"`
}

// DeleteAnswer is the answer of DELETE /api/memory/{id}/keys/{key}:
// Deleted is false when there was no such key (deleting is idempotent).
type DeleteAnswer struct {
	Key     string `json:"key"`
	Deleted bool   `json:"deleted"`
}

// BulkDeleteAnswer says how many of the keys were there and are deleted.
type BulkDeleteAnswer struct {
	Deleted int `json:"deleted"`
}

// KeyInfo is one key of a listing.
type KeyInfo struct {
	Key string `json:"key"`
	// Bytes is the value's length.
	Bytes     int64           `json:"bytes"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	ExpiresAt *time.Time      `json:"expiresAt,omitempty"`
}

// KeyPage is a page of a listing, in byte order of the keys. Cursor, when
// ListComplete is false, continues it.
type KeyPage struct {
	Keys         []KeyInfo `json:"keys"`
	Cursor       string    `json:"cursor"`
	ListComplete bool      `json:"listComplete"`
}

// ListQuery selects a page of keys.
type ListQuery struct {
	Prefix string
	Cursor string
	Limit  int
}

// entry is a validated key to write.
type entry struct {
	key      string
	value    []byte
	metadata string
	ttl      int64
}

// size is what the entry counts against the store's bytes.
func (e entry) size() int64 { return int64(len(e.key) + len(e.value) + len(e.metadata)) }

// expiry is the Unix milliseconds of a time to live from now (0: none).
func expiry(now time.Time, ttl int64) int64 {
	if ttl == 0 {
		return 0
	}
	return now.Add(time.Duration(ttl) * time.Second).UnixMilli()
}

// msTime is the time of Unix milliseconds ms (nil for 0, never).
func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// over tells whether n passes limit (plans.Unlimited: never).
func over(n, limit int64) bool { return limit != plans.Unlimited && n > limit }

// The statements of Get, prepared once by New (the metadata database
// keeps no statement cache, and preparing costs as much as running them).
// On PostgreSQL the store and the key are read in one statement (one round
// trip); on SQLite in two, which measured 9.5 µs against 23 µs for the join
// (SQLite builds a Bloom filter for each run of a join).
const (
	// getSQL reads a store and one of its keys: the key's columns are NULL
	// when it is missing or expired.
	getSQL = `SELECT s.workspace_id, s.project_id, s.status, k.value, k.metadata, k.expires_at
	FROM memory_stores s LEFT JOIN memory_keys k ON k.store_id = s.id AND k.key_name = ? AND (k.expires_at = 0 OR k.expires_at > ?)
	WHERE s.id = ?`
	getStoreSQL = `SELECT workspace_id, project_id, status FROM memory_stores WHERE id = ?`
	getKeySQL   = `SELECT value, metadata, expires_at FROM memory_keys WHERE store_id = ? AND key_name = ? AND (expires_at = 0 OR expires_at > ?)`
)

// getStmts are Get's prepared statements: join on PostgreSQL, store and
// key on SQLite.
type getStmts struct{ join, store, key *sql.Stmt }

func prepareGet(db *store.DB) (g getStmts, err error) {
	if db.Dialect() == store.Postgres {
		g.join, err = db.Prepare(getSQL)
		return g, err
	}
	if g.store, err = db.Prepare(getStoreSQL); err != nil {
		return g, err
	}
	g.key, err = db.Prepare(getKeySQL)
	return g, err
}

func (g getStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{g.join, g.store, g.key} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// Get reads one key: 404 key_not_found when it is missing or expired.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id, key string) (Item, error) {
	if err := checkKey(key); err != nil {
		return Item{}, err
	}
	var r record
	var it Item
	var meta sql.NullString
	var exp sql.NullInt64
	now := s.now().UnixMilli()
	var err error
	if s.get.join != nil {
		err = s.get.join.QueryRowContext(ctx, []byte(key), now, id).Scan(&r.Workspace, &r.Project, &r.Status, &it.Value, &meta, &exp)
	} else if err = s.get.store.QueryRowContext(ctx, id).Scan(&r.Workspace, &r.Project, &r.Status); err == nil {
		err = s.get.key.QueryRowContext(ctx, id, []byte(key), now).Scan(&it.Value, &meta, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil // exp stays invalid: no such key
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err := visible(p, r, err, id, OpRead); err != nil {
		return Item{}, err
	}
	s.count(r.Workspace, r.Project, "get", 1)
	if !exp.Valid {
		return Item{}, errKeyNotFound(key)
	}
	if it.Value == nil {
		it.Value = []byte{}
	}
	it.Metadata = meta.String
	if t := msTime(exp.Int64); t != nil {
		it.ExpiresAt = *t
	}
	return it, nil
}

func errKeyNotFound(key string) error {
	return api.E(api.KindNotFound, "key_not_found", "no key %q in this store (never written, deleted or expired)", key)
}

// Put writes one key (the raw-body form).
func (s *Service) Put(ctx context.Context, p *auth.Principal, id, key string, value []byte, ttl int64, metadata []byte) (Written, error) {
	if err := checkKey(key); err != nil {
		return Written{}, err
	}
	if err := checkTTL(ttl); err != nil {
		return Written{}, err
	}
	meta, err := checkMetadata(metadata)
	if err != nil {
		return Written{}, err
	}
	if len(value) > MaxValueBytes {
		return Written{}, errValueTooLarge(len(value))
	}
	w, err := s.put(ctx, p, id, []entry{{key: key, value: value, metadata: meta, ttl: ttl}})
	if err != nil {
		return Written{}, err
	}
	return w[0], nil
}

func errValueTooLarge(n int) error {
	return api.E(api.KindTooLarge, "value_too_large", "the value is %d bytes; values are at most %d bytes (1 MiB): split it across keys or keep it in a storage bucket", n, MaxValueBytes).
		With("limit", MaxValueBytes)
}

// PutMany writes the entries of a bulk put, all or none.
func (s *Service) PutMany(ctx context.Context, p *auth.Principal, id string, req BulkPutRequest) (BulkPutAnswer, error) {
	if len(req.Entries) == 0 || len(req.Entries) > MaxBulkKeys {
		return BulkPutAnswer{}, api.E(api.KindInvalid, "too_many_keys", "entries must hold 1 to %d keys, not %d", MaxBulkKeys, len(req.Entries)).With("limit", MaxBulkKeys)
	}
	es := make([]entry, len(req.Entries))
	seen := make(map[string]bool, len(req.Entries))
	for i, e := range req.Entries {
		if err := checkKey(e.Key); err != nil {
			return BulkPutAnswer{}, at(err, i)
		}
		if seen[e.Key] {
			return BulkPutAnswer{}, at(api.E(api.KindInvalid, "duplicate_key", "key %q is in entries twice: send each key once", e.Key), i)
		}
		seen[e.Key] = true
		if err := checkTTL(e.TTLSeconds); err != nil {
			return BulkPutAnswer{}, at(err, i)
		}
		meta, err := checkMetadata(e.Metadata)
		if err != nil {
			return BulkPutAnswer{}, at(err, i)
		}
		value := []byte(e.Value)
		if e.Base64 {
			if value, err = base64.StdEncoding.DecodeString(e.Value); err != nil {
				return BulkPutAnswer{}, at(api.E(api.KindInvalid, "invalid_value", "value is not standard base64 (base64 is true)"), i)
			}
		}
		if len(value) > MaxValueBytes {
			return BulkPutAnswer{}, at(errValueTooLarge(len(value)), i)
		}
		es[i] = entry{key: e.Key, value: value, metadata: meta, ttl: e.TTLSeconds}
	}
	w, err := s.put(ctx, p, id, es)
	return BulkPutAnswer{Written: w}, err
}

// at names the entry or key an error is about.
func at(err error, i int) error {
	var e *api.Error
	if errors.As(err, &e) {
		return e.With("index", i)
	}
	return err
}

// put writes es to store id in one transaction, within the plan's caps:
// a put that would take the store past its keys or bytes is refused whole
// (402 plan_limit), after expired keys have given back their room.
func (s *Service) put(ctx context.Context, p *auth.Principal, id string, es []entry) ([]Written, error) {
	plan := s.d.Plans.Plan(ctx, p.WorkspaceID)
	lim := s.cfg.limits(plan)
	var add int64
	keys := make([]any, 0, len(es)+1)
	keys = append(keys, id)
	for _, e := range es {
		add += e.size()
		keys = append(keys, []byte(e.key))
	}
	var r record
	var written []Written
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = s.storeByID(ctx, tx, id, true)
		if err := visible(p, r, err, id, OpWrite); err != nil {
			return err
		}
		now := s.now()
		nowMs := now.UnixMilli()
		if over(r.Keys+int64(len(es)), lim.KeysPerStore) || over(r.Bytes+add, lim.BytesPerStore) {
			n, b, err := s.dropExpired(ctx, tx, id, nowMs, 0)
			if err != nil {
				return err
			}
			r.Keys, r.Bytes = r.Keys-n, r.Bytes-b
		}
		old := make(map[string]int64, len(es))
		rows, err := tx.QueryContext(ctx, `SELECT key_name, size FROM memory_keys WHERE store_id = ? AND key_name IN (`+in(len(es))+`)`, keys...)
		if err != nil {
			return fmt.Errorf("memory: read keys: %w", err)
		}
		for rows.Next() {
			var k []byte
			var size int64
			if err := rows.Scan(&k, &size); err != nil {
				rows.Close()
				return fmt.Errorf("memory: read keys: %w", err)
			}
			old[string(k)] = size
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("memory: read keys: %w", err)
		}
		var dk, db int64
		for _, e := range es {
			o, ok := old[e.key]
			if !ok {
				dk++
			}
			db += e.size() - o
		}
		if dk > 0 && over(r.Keys+dk, lim.KeysPerStore) {
			return s.limitError(plan, "keys_per_store", func(l Limits) int64 { return l.KeysPerStore }, r.Keys, r.Keys+dk,
				"memory store %s holds %d keys and the %s plan allows %d per store; this put adds %d: delete keys, let them expire, or move to a larger plan",
				r.Name, r.Keys, plan, lim.KeysPerStore, dk)
		}
		if db > 0 && over(r.Bytes+db, lim.BytesPerStore) {
			return s.limitError(plan, "bytes_per_store", func(l Limits) int64 { return l.BytesPerStore }, r.Bytes, r.Bytes+db,
				"memory store %s holds %d bytes and the %s plan allows %d per store; this put adds %d: delete keys, let them expire, or move to a larger plan",
				r.Name, r.Bytes, plan, lim.BytesPerStore, db)
		}
		stamp := store.FormatTime(now)
		written = make([]Written, len(es))
		for i, e := range es {
			exp := expiry(now, e.ttl)
			if _, err := tx.ExecContext(ctx, `INSERT INTO memory_keys (store_id, key_name, value, metadata, expires_at, size, updated_at)
				VALUES (?,?,?,?,?,?,?)
				ON CONFLICT (store_id, key_name) DO UPDATE SET value = excluded.value, metadata = excluded.metadata,
					expires_at = excluded.expires_at, size = excluded.size, updated_at = excluded.updated_at`,
				id, []byte(e.key), nonNil(e.value), e.metadata, exp, e.size(), stamp); err != nil {
				return fmt.Errorf("memory: write key: %w", err)
			}
			written[i] = Written{Key: e.key, Bytes: len(e.value), ExpiresAt: msTime(exp)}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE memory_stores SET key_count = ?, bytes = ?, updated_at = ? WHERE id = ?`,
			r.Keys+dk, r.Bytes+db, stamp, id); err != nil {
			return fmt.Errorf("memory: store counts: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.count(r.Workspace, r.Project, "put", len(es))
	return written, nil
}

// nonNil keeps an empty value a zero-length blob rather than NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// dropExpired deletes, inside tx (which holds the store's row), keys of the
// store expired at nowMs: at most limit of them (every one when limit is
// 0). It returns how many keys and bytes went; the caller updates the
// store's counts.
func (s *Service) dropExpired(ctx context.Context, tx *sql.Tx, id string, nowMs int64, limit int) (n, b int64, err error) {
	q := `SELECT key_name, size FROM memory_keys WHERE store_id = ? AND expires_at > 0 AND expires_at <= ? ORDER BY expires_at`
	args := []any{id, nowMs}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("memory: expired keys: %w", err)
	}
	var keys [][]byte
	for rows.Next() {
		var k []byte
		var size int64
		if err := rows.Scan(&k, &size); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("memory: expired keys: %w", err)
		}
		keys = append(keys, k)
		b += size
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("memory: expired keys: %w", err)
	}
	for start := 0; start < len(keys); start += DefaultSweepBatch {
		part := keys[start:min(start+DefaultSweepBatch, len(keys))]
		args := make([]any, 0, len(part)+1)
		args = append(args, id)
		for _, k := range part {
			args = append(args, k)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_keys WHERE store_id = ? AND key_name IN (`+in(len(part))+`)`, args...); err != nil {
			return 0, 0, fmt.Errorf("memory: remove expired keys: %w", err)
		}
	}
	s.m.swept.Add(float64(len(keys)))
	return int64(len(keys)), b, nil
}

// checkKeys validates the keys of a bulk get or delete.
func checkKeys(keys []string) error {
	if len(keys) == 0 || len(keys) > MaxBulkKeys {
		return api.E(api.KindInvalid, "too_many_keys", "keys must hold 1 to %d keys, not %d", MaxBulkKeys, len(keys)).With("limit", MaxBulkKeys)
	}
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return at(err, i)
		}
	}
	return nil
}

// keyArgs are the arguments of a statement on store id and keys.
func keyArgs(id string, keys []string) []any {
	args := make([]any, 0, len(keys)+2)
	args = append(args, id)
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			args = append(args, []byte(k))
		}
	}
	return args
}

// GetMany reads up to MaxBulkKeys keys at once: each maps to its value, or
// to null when missing or expired. Values together may take at most
// MaxBulkGetBytes (400 result_too_large past it).
func (s *Service) GetMany(ctx context.Context, p *auth.Principal, id string, req KeysRequest) (BulkGetAnswer, error) {
	if err := checkKeys(req.Keys); err != nil {
		return BulkGetAnswer{}, err
	}
	r, err := s.storeByID(ctx, s.d.DB, id, false)
	if err := visible(p, r, err, id, OpRead); err != nil {
		return BulkGetAnswer{}, err
	}
	args := keyArgs(id, req.Keys)
	rows, err := s.d.DB.QueryContext(ctx, `SELECT key_name, value, metadata, expires_at FROM memory_keys
		WHERE store_id = ? AND key_name IN (`+in(len(args)-1)+`) AND (expires_at = 0 OR expires_at > ?)`,
		append(args, s.now().UnixMilli())...)
	if err != nil {
		return BulkGetAnswer{}, fmt.Errorf("memory: read keys: %w", err)
	}
	defer rows.Close()
	out := BulkGetAnswer{Values: make(map[string]*Value, len(req.Keys))}
	for _, k := range req.Keys {
		out.Values[k] = nil
	}
	total := 0
	for rows.Next() {
		var k, v []byte
		var meta string
		var exp int64
		if err := rows.Scan(&k, &v, &meta, &exp); err != nil {
			return BulkGetAnswer{}, fmt.Errorf("memory: read keys: %w", err)
		}
		if total += len(v); total > MaxBulkGetBytes {
			return BulkGetAnswer{}, api.E(api.KindInvalid, "result_too_large",
				"these values take more than %d bytes together: ask for fewer keys at once, or get the large ones one by one", MaxBulkGetBytes).
				With("limit", MaxBulkGetBytes)
		}
		val := &Value{ExpiresAt: msTime(exp)}
		if meta != "" {
			val.Metadata = json.RawMessage(meta)
		}
		if utf8.Valid(v) {
			val.Value = string(v)
		} else {
			val.Value, val.Base64 = base64.StdEncoding.EncodeToString(v), true
		}
		out.Values[string(k)] = val
	}
	if err := rows.Err(); err != nil {
		return BulkGetAnswer{}, fmt.Errorf("memory: read keys: %w", err)
	}
	s.count(r.Workspace, r.Project, "get", len(req.Keys))
	return out, nil
}

// Delete deletes one key; deleted is false when it was not there.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id, key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	n, err := s.deleteKeys(ctx, p, id, []string{key})
	return n == 1, err
}

// DeleteMany deletes up to MaxBulkKeys keys at once.
func (s *Service) DeleteMany(ctx context.Context, p *auth.Principal, id string, req KeysRequest) (BulkDeleteAnswer, error) {
	if err := checkKeys(req.Keys); err != nil {
		return BulkDeleteAnswer{}, err
	}
	n, err := s.deleteKeys(ctx, p, id, req.Keys)
	return BulkDeleteAnswer{Deleted: n}, err
}

// deleteKeys deletes keys of store id and returns how many were there
// (expired keys are deleted too, but were not there for the caller).
func (s *Service) deleteKeys(ctx context.Context, p *auth.Principal, id string, keys []string) (int, error) {
	args := keyArgs(id, keys)
	var r record
	visibleDeleted := 0
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = s.storeByID(ctx, tx, id, true)
		if err := visible(p, r, err, id, OpWrite); err != nil {
			return err
		}
		nowMs := s.now().UnixMilli()
		rows, err := tx.QueryContext(ctx, `SELECT size, expires_at FROM memory_keys WHERE store_id = ? AND key_name IN (`+in(len(args)-1)+`)`, args...)
		if err != nil {
			return fmt.Errorf("memory: read keys: %w", err)
		}
		var n, b int64
		visibleDeleted = 0
		for rows.Next() {
			var size, exp int64
			if err := rows.Scan(&size, &exp); err != nil {
				rows.Close()
				return fmt.Errorf("memory: read keys: %w", err)
			}
			n, b = n+1, b+size
			if exp == 0 || exp > nowMs {
				visibleDeleted++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("memory: read keys: %w", err)
		}
		if n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_keys WHERE store_id = ? AND key_name IN (`+in(len(args)-1)+`)`, args...); err != nil {
			return fmt.Errorf("memory: delete keys: %w", err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE memory_stores SET key_count = ?, bytes = ?, updated_at = ? WHERE id = ?`,
			r.Keys-n, r.Bytes-b, store.FormatTime(s.now()), id)
		if err != nil {
			return fmt.Errorf("memory: store counts: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.count(r.Workspace, r.Project, "delete", len(keys))
	return visibleDeleted, nil
}

// List returns a page of the store's keys starting with q.Prefix, in byte
// order, after q.Cursor; expired keys are left out.
func (s *Service) List(ctx context.Context, p *auth.Principal, id string, q ListQuery) (KeyPage, error) {
	if err := checkPrefix(q.Prefix); err != nil {
		return KeyPage{}, err
	}
	var after string
	if q.Cursor != "" {
		var err error
		if after, err = decodeCursor(q.Cursor); err != nil {
			return KeyPage{}, err
		}
	}
	if q.Limit <= 0 {
		q.Limit = DefaultListLimit
	}
	r, err := s.storeByID(ctx, s.d.DB, id, false)
	if err := visible(p, r, err, id, OpRead); err != nil {
		return KeyPage{}, err
	}
	query := `SELECT key_name, length(value), metadata, expires_at FROM memory_keys WHERE store_id = ? AND (expires_at = 0 OR expires_at > ?)`
	args := []any{id, s.now().UnixMilli()}
	if q.Prefix != "" {
		query += ` AND key_name >= ?`
		args = append(args, []byte(q.Prefix))
		if end, ok := prefixEnd(q.Prefix); ok {
			query += ` AND key_name < ?`
			args = append(args, end)
		}
	}
	if after != "" {
		query += ` AND key_name > ?`
		args = append(args, []byte(after))
	}
	query += ` ORDER BY key_name LIMIT ?`
	args = append(args, q.Limit+1)
	rows, err := s.d.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return KeyPage{}, fmt.Errorf("memory: list keys: %w", err)
	}
	defer rows.Close()
	page := KeyPage{Keys: make([]KeyInfo, 0, min(q.Limit, 64))}
	for rows.Next() {
		var k []byte
		var ki KeyInfo
		var meta string
		var exp int64
		if err := rows.Scan(&k, &ki.Bytes, &meta, &exp); err != nil {
			return KeyPage{}, fmt.Errorf("memory: list keys: %w", err)
		}
		if len(page.Keys) == q.Limit {
			page.Cursor = encodeCursor(page.Keys[len(page.Keys)-1].Key)
			break
		}
		ki.Key, ki.ExpiresAt = string(k), msTime(exp)
		if meta != "" {
			ki.Metadata = json.RawMessage(meta)
		}
		page.Keys = append(page.Keys, ki)
	}
	if err := rows.Err(); err != nil {
		return KeyPage{}, fmt.Errorf("memory: list keys: %w", err)
	}
	page.ListComplete = page.Cursor == ""
	s.count(r.Workspace, r.Project, "list", 1)
	return page, nil
}
