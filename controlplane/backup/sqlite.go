package backup

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	_ "github.com/mattn/go-sqlite3" // the driver the store and areas use
)

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// isSQLite reports whether the file at p is an SQLite database.
func isSQLite(p string) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	b := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, b); err != nil {
		return false, nil // shorter than a header: not a database
	}
	return bytes.Equal(b, sqliteMagic), nil
}

// snapshotSQLite writes a transactionally consistent copy of the database
// at src to dst with VACUUM INTO: one read transaction, so it sees every
// commit made before it began and none made after, while writers (in
// this process or the platform's) go on. src is opened read-only.
func snapshotSQLite(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return err
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "10000")
	db, err := sql.Open("sqlite3", (&url.URL{Scheme: "file", Opaque: uriPath(src), RawQuery: q.Encode()}).String())
	if err != nil {
		return fmt.Errorf("backup: open %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("backup: snapshot %s: %w", src, err)
	}
	return nil
}

// uriPath escapes what ends or changes a path inside a file: URI.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}
