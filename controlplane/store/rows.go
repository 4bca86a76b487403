package store

import "database/sql"

// RowScanner is what a row scan function reads from: *sql.Rows and
// *sql.Row both are one, so one scan function serves a list and a single
// look-up.
type RowScanner = interface{ Scan(dest ...any) error }

// AppendRows appends to dst each row of rows as scan reads it, then closes
// rows. It returns the first error of scan or of the iteration, with nil
// slice; pass a non-nil empty dst for a list that is [] rather than null
// when there are no rows.
func AppendRows[T any](dst []T, rows *sql.Rows, scan func(RowScanner) (T, error)) ([]T, error) {
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return dst, nil
}

// ScanString is a scan function for a single text column.
func ScanString(sc RowScanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}
