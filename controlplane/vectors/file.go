package vectors

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/vectors/filter"
)

// file is a collection's own SQLite database: the vectors with their raw
// values and metadata, the metadata indexes and the mutation counter. WAL
// with synchronous=FULL: an answered upsert survives a crash or power loss.
type file struct {
	db *sql.DB
}

const fileSchema = `
CREATE TABLE IF NOT EXISTS info (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS metadata_indexes (
	property   TEXT PRIMARY KEY,
	type       TEXT NOT NULL,
	since      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
	id        TEXT PRIMARY KEY,
	namespace TEXT NOT NULL DEFAULT '',
	seq       INTEGER NOT NULL,
	vals      BLOB NOT NULL,
	metadata  TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
`

// openFile opens (creating when create is set) the file at path.
func openFile(ctx context.Context, path string, create bool) (*file, error) {
	if !create {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("vectors: open %s: %w", path, err)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("vectors: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, fileSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("vectors: schema %s: %w", path, err)
	}
	return &file{db: db}, nil
}

func (f *file) close() error { return f.db.Close() }

// removeFiles deletes a collection file and its WAL companions.
func removeFiles(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// indexDef is a metadata index.
type indexDef struct {
	Property string
	Type     filter.Kind
	Since    int64
}

// indexTypes maps the API's index type names to value kinds.
var indexTypes = map[string]filter.Kind{"string": filter.String, "number": filter.Number, "boolean": filter.Bool}

func typeName(k filter.Kind) string {
	switch k {
	case filter.Number:
		return "number"
	case filter.Bool:
		return "boolean"
	}
	return "string"
}

// init writes the collection's shape; called once at create.
func (f *file) init(ctx context.Context, dims int, metric string, idx []indexDef) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for k, v := range map[string]string{"dimensions": strconv.Itoa(dims), "metric": metric, "seq": "0"} {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO info(key, value) VALUES (?, ?)`, k, v); err != nil {
			return err
		}
	}
	for _, d := range idx {
		if _, err := tx.ExecContext(ctx, `INSERT INTO metadata_indexes(property, type, since) VALUES (?,?,0)`, d.Property, typeName(d.Type)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// seq returns the mutation counter.
func (f *file) seq(ctx context.Context) (int64, error) {
	var s string
	if err := f.db.QueryRowContext(ctx, `SELECT value FROM info WHERE key = 'seq'`).Scan(&s); err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// bump advances the mutation counter inside tx and returns its new value.
func bump(ctx context.Context, tx *sql.Tx) (int64, error) {
	var s string
	if err := tx.QueryRowContext(ctx, `UPDATE info SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq' RETURNING value`).Scan(&s); err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// indexes returns the metadata indexes in creation order.
func (f *file) indexes(ctx context.Context) ([]indexDef, error) {
	rows, err := f.db.QueryContext(ctx, `SELECT property, type, since FROM metadata_indexes ORDER BY since, property`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []indexDef
	for rows.Next() {
		var d indexDef
		var typ string
		if err := rows.Scan(&d.Property, &typ, &d.Since); err != nil {
			return nil, err
		}
		d.Type = indexTypes[typ]
		out = append(out, d)
	}
	return out, rows.Err()
}

// row is one stored vector.
type row struct {
	ID        string
	Namespace string
	Seq       int64
	Values    []float32
	Metadata  string // compact JSON object, or "" for none
}

// encodeValues packs float32 little-endian.
func encodeValues(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeValues(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// upsert writes rows in one transaction under a new mutation number, which
// it returns (the rows' Seq is set to it).
func (f *file) upsert(ctx context.Context, rows []row) (int64, error) {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	seq, err := bump(ctx, tx)
	if err != nil {
		return 0, err
	}
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vectors(id, namespace, seq, vals, metadata) VALUES (?,?,?,?,?)`)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	for i := range rows {
		rows[i].Seq = seq
		if _, err := st.ExecContext(ctx, rows[i].ID, rows[i].Namespace, seq, encodeValues(rows[i].Values), rows[i].Metadata); err != nil {
			return 0, err
		}
	}
	return seq, tx.Commit()
}

// delete removes ids in one transaction and returns the mutation number
// and how many existed.
func (f *file) delete(ctx context.Context, ids []string) (int64, int, error) {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	seq, err := bump(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE id = ?`, id)
		if err != nil {
			return 0, 0, err
		}
		c, _ := res.RowsAffected()
		n += int(c)
	}
	return seq, n, tx.Commit()
}

// addIndex records a metadata index covering writes after the current
// mutation, and returns it.
func (f *file) addIndex(ctx context.Context, property string, typ filter.Kind) (indexDef, error) {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return indexDef{}, err
	}
	defer tx.Rollback()
	seq, err := bump(ctx, tx)
	if err != nil {
		return indexDef{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO metadata_indexes(property, type, since) VALUES (?,?,?)`, property, typeName(typ), seq); err != nil {
		return indexDef{}, err
	}
	return indexDef{Property: property, Type: typ, Since: seq}, tx.Commit()
}

// each calls fn for every stored vector.
func (f *file) each(ctx context.Context, fn func(r row) error) error {
	rows, err := f.db.QueryContext(ctx, `SELECT id, namespace, seq, vals, metadata FROM vectors`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		var vals []byte
		if err := rows.Scan(&r.ID, &r.Namespace, &r.Seq, &vals, &r.Metadata); err != nil {
			return err
		}
		r.Values = decodeValues(vals)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// fetch reads the stored values and metadata of ids.
func (f *file) fetch(ctx context.Context, ids []string) (map[string]row, error) {
	out := make(map[string]row, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := f.db.QueryContext(ctx, `SELECT id, namespace, seq, vals, metadata FROM vectors WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		var vals []byte
		if err := rows.Scan(&r.ID, &r.Namespace, &r.Seq, &vals, &r.Metadata); err != nil {
			return nil, err
		}
		r.Values = decodeValues(vals)
		out[r.ID] = r
	}
	return out, rows.Err()
}
