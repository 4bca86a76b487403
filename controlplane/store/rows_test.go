package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/svcplatform/platform/controlplane/store"
)

// TestAppendRows: rows are appended in order after what dst holds, no rows
// keep dst as given (nil or empty), and a scan error returns it with no
// rows.
func TestAppendRows(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "meta.db"))
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (id, n) VALUES ('a', 1), ('b', 2), ('c', 3)`); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id string
		n  int
	}
	scanRow := func(sc store.RowScanner) (row, error) {
		var r row
		err := sc.Scan(&r.id, &r.n)
		return r, err
	}
	errStop := errors.New("stop")
	cases := []struct {
		name    string
		where   string
		dst     []row
		scan    func(store.RowScanner) (row, error)
		want    []row
		wantNil bool
		err     error
	}{
		{name: "all rows in order", where: "n > 0", scan: scanRow, want: []row{{"a", 1}, {"b", 2}, {"c", 3}}},
		{name: "after what dst holds", where: "n > 2", dst: []row{{"z", 0}}, scan: scanRow, want: []row{{"z", 0}, {"c", 3}}},
		{name: "no rows keep nil", where: "n > 9", scan: scanRow, wantNil: true},
		{name: "no rows keep empty", where: "n > 9", dst: []row{}, scan: scanRow, want: []row{}},
		{name: "scan error", where: "n > 0", scan: func(sc store.RowScanner) (row, error) {
			r, err := scanRow(sc)
			if err == nil && r.n == 2 {
				err = errStop
			}
			return r, err
		}, wantNil: true, err: errStop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := db.QueryContext(ctx, `SELECT id, n FROM t WHERE `+c.where+` ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			got, err := store.AppendRows(c.dst, rows, c.scan)
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if c.wantNil != (got == nil) || len(got) != len(c.want) {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Fatalf("got %#v, want %#v", got, c.want)
				}
			}
			if rows.Next() {
				t.Fatal("rows left open")
			}
		})
	}
	ids, err := db.QueryContext(ctx, `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := store.AppendRows(nil, ids, store.ScanString); err != nil || len(got) != 3 || got[2] != "c" {
		t.Fatalf("ScanString: %v %v", got, err)
	}
}
