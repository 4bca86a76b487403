package databases

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/svcplatform/platform/controlplane/store"
)

// dumpFile writes the .sql dump of the SQLite file at src to dest, through
// a temporary file renamed into place once synced.
func dumpFile(ctx context.Context, src, dest string) (err error) {
	db, err := sql.Open("sqlite3", "file:"+src+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tmp := dest + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<16)
	if err = writeDump(ctx, db, w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

// schemaEntry is a row of sqlite_schema.
type schemaEntry struct {
	name, sql string
}

// writeDump writes the schema and data of db as SQL that the sqlite3 shell
// (or any SQLite tool) loads back into the same database, in the layout of
// the shell's .dump: tables with their rows first, then indexes, triggers
// and views, inside one transaction with foreign keys off. Values are
// written by SQLite's own quote(), which renders every REAL so that it
// reads back to the same bits, TEXT as a literal (newlines and quotes
// included) and BLOBs as X'..'. Rowids of tables without an INTEGER
// PRIMARY KEY are kept. Virtual tables are declared through sqlite_schema
// as the shell does, their data travelling in their shadow tables.
func writeDump(ctx context.Context, db *sql.DB, w io.Writer) error {
	var tables []schemaEntry
	rows, err := db.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql NOT NULL ORDER BY tbl_name = 'sqlite_sequence', rowid`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var e schemaEntry
		if err := rows.Scan(&e.name, &e.sql); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n"); err != nil {
		return err
	}
	writableSchema := false
	for _, t := range tables {
		var err error
		switch {
		case t.name == "sqlite_sequence":
			_, err = io.WriteString(w, "DELETE FROM sqlite_sequence;\n")
			if err == nil {
				err = dumpRows(ctx, db, w, t.name, false)
			}
		case hasPrefixFold(t.name, "sqlite_stat"):
			_, err = io.WriteString(w, "ANALYZE sqlite_schema;\n")
			if err == nil {
				err = dumpRows(ctx, db, w, t.name, false)
			}
		case hasPrefixFold(t.name, "sqlite_"):
			continue
		case hasPrefixFold(t.sql, "CREATE VIRTUAL TABLE"):
			if !writableSchema {
				_, err = io.WriteString(w, "PRAGMA writable_schema=ON;\n")
				writableSchema = true
			}
			if err == nil {
				_, err = fmt.Fprintf(w, "INSERT INTO sqlite_schema(type,name,tbl_name,rootpage,sql)VALUES('table',%s,%s,0,%s);\n",
					literal(t.name), literal(t.name), literal(t.sql))
			}
		default:
			_, err = io.WriteString(w, t.sql+";\n")
			if err == nil {
				err = dumpRows(ctx, db, w, t.name, true)
			}
		}
		if err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
	}
	rows, err = db.QueryContext(ctx, `SELECT sql FROM sqlite_schema WHERE sql NOT NULL AND type IN ('index', 'trigger', 'view') ORDER BY rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if _, err := io.WriteString(w, s+";\n"); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if writableSchema {
		if _, err := io.WriteString(w, "PRAGMA writable_schema=OFF;\n"); err != nil {
			return err
		}
	}
	var userVersion int64
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&userVersion); err != nil {
		return err
	}
	if userVersion != 0 {
		if _, err := fmt.Fprintf(w, "PRAGMA user_version=%d;\n", userVersion); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "COMMIT;\n")
	return err
}

// dumpRows writes one INSERT per row of table; keepRowid also writes the
// rowid of a rowid table that has no INTEGER PRIMARY KEY standing for it.
func dumpRows(ctx context.Context, db *sql.DB, w io.Writer, table string, keepRowid bool) error {
	cols, err := dumpColumns(ctx, db, table)
	if err != nil {
		return err
	}
	if keepRowid {
		rowid, err := rowidName(ctx, db, table, cols)
		if err != nil {
			return err
		}
		if rowid != "" {
			cols = append([]string{rowid}, cols...)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	quoted := make([]string, len(cols))
	selects := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = ident(c)
		selects[i] = "quote(" + ident(c) + ")"
	}
	prefix := "INSERT INTO " + ident(table) + "(" + strings.Join(quoted, ",") + ") VALUES("
	rows, err := db.QueryContext(ctx, "SELECT "+strings.Join(selects, ",")+" FROM "+ident(table))
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if _, err := io.WriteString(w, prefix+strings.Join(vals, ",")+");\n"); err != nil {
			return err
		}
	}
	return rows.Err()
}

// dumpColumns lists the columns a row is written with: all but generated
// and hidden ones.
func dumpColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`, table)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, func(sc store.RowScanner) (c string, err error) {
		err = sc.Scan(&c)
		return c, err
	})
}

// rowidName returns a name the rowid of table can be written under, or ""
// when the table has no rowid of its own to keep (WITHOUT ROWID, an
// INTEGER PRIMARY KEY, or every alias taken by a column).
func rowidName(ctx context.Context, db *sql.DB, table string, cols []string) (string, error) {
	var withoutRowid int
	err := db.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?`, table).Scan(&withoutRowid)
	if errors.Is(err, sql.ErrNoRows) || withoutRowid == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var pks int
	var pkType string
	err = db.QueryRowContext(ctx, `SELECT count(*), coalesce(max(upper(type)), '') FROM pragma_table_info(?) WHERE pk > 0`, table).Scan(&pks, &pkType)
	if err != nil {
		return "", err
	}
	if pks == 1 && pkType == "INTEGER" {
		return "", nil
	}
	for _, name := range []string{"rowid", "_rowid_", "oid"} {
		taken := false
		for _, c := range cols {
			taken = taken || strings.EqualFold(c, name)
		}
		if !taken {
			return name, nil
		}
	}
	return "", nil
}

// ident quotes a name for SQL.
func ident(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// literal quotes a string for SQL.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
