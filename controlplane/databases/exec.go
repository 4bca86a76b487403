package databases

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Meta describes what a statement (or a request) did, with the names
// Cloudflare D1 uses.
type Meta struct {
	// Changes is how many rows the statements inserted, updated or deleted
	// themselves (sqlite3_changes, summed; rows changed by triggers and
	// foreign-key actions are not included).
	Changes int64 `json:"changes"`
	// LastRowID is sqlite3_last_insert_rowid() after the statement on the
	// connection that ran it; 0 for statements that only read (SELECT,
	// VALUES, WITH ... SELECT, EXPLAIN), even after an INSERT of the same
	// request. Summed over a request's statements it is the last one that
	// is not 0.
	LastRowID int64 `json:"last_row_id"`
	// RowsRead is how many rows the statements returned.
	RowsRead int64 `json:"rows_read"`
	// RowsWritten is how many rows were inserted, updated or deleted,
	// including by triggers and foreign-key actions (sqlite3_total_changes).
	RowsWritten int64 `json:"rows_written"`
	// Duration is the time the statements took in SQLite, in milliseconds.
	Duration float64 `json:"duration"`
	// SizeAfter is the database's size in bytes after the request: its
	// pages in use (page_count - freelist_count) times the page size.
	SizeAfter int64 `json:"size_after"`
	// ChangedDB tells whether the statements changed rows or the schema.
	ChangedDB bool `json:"changed_db"`
}

// add sums o into m; SizeAfter takes o's, and LastRowID o's unless o
// only read (0), so the sum tells the request's last inserted rowid.
func (m *Meta) add(o Meta) {
	m.Changes += o.Changes
	if o.LastRowID != 0 {
		m.LastRowID = o.LastRowID
	}
	m.RowsRead += o.RowsRead
	m.RowsWritten += o.RowsWritten
	m.Duration += o.Duration
	m.SizeAfter = o.SizeAfter
	m.ChangedDB = m.ChangedDB || o.ChangedDB
}

// job is the statements of one request, ready to run.
type job struct {
	stmts []Statement
	args  [][]driver.NamedValue
	// all keeps the rows of every statement (a batch); otherwise only the
	// last statement's rows are kept.
	all bool
	// readOnly routes the job to a read-only connection first.
	readOnly bool
	// timeout bounds the time the statements run.
	timeout time.Duration
	// maxResult bounds the encoded rows kept, all statements together.
	maxResult int
	// maxRows bounds the rows kept, all statements together.
	maxRows int
	// gate applies the storage hold on the writer before the commit; nil
	// when the workspace pays for storage past its allowance.
	gate *gate
	// lateHold applies the storage hold to a job guessed read-only that
	// turned out to write, before it runs again on the writer.
	lateHold func() (*gate, error)
}

// outcome is what one statement returned.
type outcome struct {
	rows json.RawMessage
	meta Meta
}

// stmtError is a statement's failure: which statement, and why.
type stmtError struct {
	index int
	err   error
	// denied is what the authorizer refused, when it did.
	denied string
}

// Error names the statement and the cause.
func (e *stmtError) Error() string { return fmt.Sprintf("statement %d: %v", e.index, e.err) }

// Unwrap returns the cause.
func (e *stmtError) Unwrap() error { return e.err }

// errResultTooLarge refuses a request whose rows, all statements
// together, would not fit in an answer's byte limit.
var errResultTooLarge = errors.New("databases: result too large")

// errResultTooManyRows refuses a request whose rows, all statements
// together, pass the answer's row limit.
var errResultTooManyRows = errors.New("databases: result has too many rows")

// errTimeout is a job that ran past its time and was interrupted.
var errTimeout = errors.New("databases: query time limit")

// errWriterBusy is a job that waited its whole time for the writer.
var errWriterBusy = errors.New("databases: writer busy")

// errMisrouted is a statement guessed read-only that tried to write.
var errMisrouted = errors.New("databases: statement writes")

// run executes the job and returns one outcome per statement and, when it
// ran on the writer, the database's size after it (-1 otherwise: size,
// the last measured size, stands). A job guessed read-only runs on a
// read-only connection; should a statement write after all, the read-only
// connection refuses it and the job runs again on the writer.
func (h *handle) run(ctx context.Context, j *job, size int64) ([]outcome, int64, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, j.timeout, errTimeout)
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	if j.readOnly {
		out, err := h.runRead(ctx, j, size)
		if !errors.Is(err, errMisrouted) {
			return out, -1, timeoutCause(ctx, err)
		}
		if j.lateHold != nil {
			if j.gate, err = j.lateHold(); err != nil {
				return nil, 0, err
			}
		}
	}
	out, size, err := h.runWrite(ctx, j)
	return out, size, timeoutCause(ctx, err)
}

// timeoutCause turns the context error of an interrupted statement into
// errTimeout when the time limit (not the caller) ended it.
func timeoutCause(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) && (errors.Is(err, context.DeadlineExceeded) || isInterrupt(err)) {
		var se *stmtError
		if errors.As(err, &se) {
			return &stmtError{index: se.index, err: errTimeout}
		}
		return errTimeout
	}
	return err
}

func isInterrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrInterrupt
}

func (h *handle) runRead(ctx context.Context, j *job, size int64) ([]outcome, error) {
	c, err := h.readers.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []outcome
	var runErr error
	err = c.Raw(func(dc any) error {
		cn := dc.(*conn)
		multi := len(j.stmts) > 1
		if multi {
			if _, err := cn.ExecContext(context.Background(), "BEGIN", nil); err != nil {
				runErr = err
				return nil
			}
		}
		out, _, runErr = cn.runAll(ctx, j, false, size)
		if multi {
			cn.ExecContext(context.Background(), "ROLLBACK", nil) // it only read
		}
		if !cn.AutoCommit() {
			return driver.ErrBadConn
		}
		return nil
	})
	if runErr != nil {
		return nil, runErr
	}
	return out, err
}

func (h *handle) runWrite(ctx context.Context, j *job) ([]outcome, int64, error) {
	c, release, err := h.acquireWriter(ctx)
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			return nil, 0, errWriterBusy
		}
		return nil, 0, err
	}
	defer release()
	var out []outcome
	var size int64
	var runErr error
	err = c.Raw(func(dc any) error {
		cn := dc.(*conn)
		bg := context.Background()
		if _, err := cn.ExecContext(bg, "BEGIN IMMEDIATE", nil); err != nil {
			runErr = err
			return nil
		}
		out, size, runErr = cn.runAll(ctx, j, true, 0)
		var admitted func(committed bool)
		if runErr == nil && j.gate != nil {
			admitted, runErr = j.gate.admit(ctx, size)
		}
		if runErr == nil {
			if _, err := cn.ExecContext(bg, "COMMIT", nil); err != nil {
				runErr = err
			}
		}
		if admitted != nil {
			admitted(runErr == nil)
		}
		if runErr != nil {
			cn.last = nil
			if !cn.AutoCommit() {
				cn.ExecContext(bg, "ROLLBACK", nil)
			}
		}
		if !cn.AutoCommit() {
			return driver.ErrBadConn
		}
		return nil
	})
	if runErr != nil {
		return nil, 0, runErr
	}
	if err != nil {
		return nil, 0, err
	}
	return out, size, nil
}

// runAll runs the job's statements in order on cn. On the writer it reads
// SQLite's change counters after each statement (and the database's size
// after the last), starting from the counters the connection's previous
// request ended with; on a reader nothing changes and size is the
// database's last measured size.
func (cn *conn) runAll(ctx context.Context, j *job, writer bool, size int64) ([]outcome, int64, error) {
	out := make([]outcome, len(j.stmts))
	var prev counters
	if writer {
		if cn.last == nil {
			c, err := cn.counters(ctx, counters{}, true, false)
			if err != nil {
				return nil, 0, err
			}
			cn.last = &c
		}
		prev = *cn.last
		cn.last = nil // unknown until the request succeeds
	}
	// The answer's budget is shared by every statement of the request, so
	// a batch of large results is bounded as a whole, not per statement.
	bytesLeft, rowsLeft := j.maxResult, j.maxRows
	for i, st := range j.stmts {
		last := i == len(j.stmts)-1
		keep := j.all || last
		start := time.Now()
		rows, n, err := cn.runStatement(ctx, st.SQL, j.args[i], keep, bytesLeft, rowsLeft)
		if err != nil {
			if !writer && isReadOnlyRefusal(err) {
				return nil, 0, errMisrouted
			}
			return nil, 0, &stmtError{index: i, err: err, denied: cn.denied}
		}
		if keep {
			bytesLeft -= len(rows)
			rowsLeft -= int(n)
		}
		m := Meta{RowsRead: n}
		if writer {
			now, err := cn.counters(ctx, prev, changesSchema(st.Verb), last)
			if err != nil {
				return nil, 0, &stmtError{index: i, err: err}
			}
			m.RowsWritten = now.total - prev.total
			if m.RowsWritten > 0 {
				m.Changes = now.changes
			}
			// A statement that only reads inserted nothing: its
			// last_row_id is 0, not an earlier statement's rowid that
			// the connection still holds.
			if !st.ReadOnly() {
				m.LastRowID = now.lastRowID
			}
			m.ChangedDB = m.RowsWritten > 0 || now.schema != prev.schema
			prev = now
			if last {
				size = now.size
			}
		}
		m.Duration = float64(time.Since(start).Microseconds()) / 1000
		out[i] = outcome{rows: rows, meta: m}
	}
	if writer {
		cn.last = &prev
	}
	for i := range out {
		out[i].meta.SizeAfter = size
	}
	return out, size, nil
}

func isReadOnlyRefusal(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrReadonly
}

// runStatement runs one statement and reads all of its rows, encoding them
// when keep, at most maxBytes of them and maxRows rows. It returns the rows
// and how many there were.
func (cn *conn) runStatement(ctx context.Context, sql string, args []driver.NamedValue, keep bool, maxBytes, maxRows int) (json.RawMessage, int64, error) {
	cn.denied = ""
	dr, err := cn.QueryContext(ctx, sql, args)
	if err != nil {
		return nil, 0, err
	}
	defer dr.Close()
	cols := dr.Columns()
	var enc *rowEncoder
	if keep && len(cols) > 0 {
		// The driver turns values of columns declared DATE, DATETIME,
		// TIMESTAMP or BOOLEAN into time.Time and bool, which would not give
		// back what was stored. Its DeclTypes returns the slice it consults:
		// clearing it makes every value come back as SQLite holds it.
		if sr, ok := dr.(*sqlite3.SQLiteRows); ok {
			clear(sr.DeclTypes())
		}
		enc = newRowEncoder(cols)
	}
	dest := make([]driver.Value, len(cols))
	var n int64
	for {
		if err := dr.Next(dest); err != nil {
			if err == io.EOF {
				break
			}
			return nil, n, err
		}
		if len(cols) == 0 {
			continue
		}
		n++
		if enc != nil {
			if n > int64(maxRows) {
				return nil, n, errResultTooManyRows
			}
			enc.add(dest)
			if enc.size() > maxBytes {
				return nil, n, errResultTooLarge
			}
		}
	}
	if enc == nil {
		return emptyRows, n, nil
	}
	return enc.json(), n, nil
}

// counters are SQLite's change counters at one moment, and the database's
// size when asked for.
type counters struct {
	changes, total, lastRowID, schema, size int64
}

// countersSQL reads the counters; [schema][size] adds the schema version
// and the pages in use (each pragma table costs about a microsecond and a
// half, so they are read only when they can have changed or are needed).
var countersSQL = [2][2]string{
	{
		`SELECT changes(), total_changes(), last_insert_rowid()`,
		`SELECT changes(), total_changes(), last_insert_rowid(), (c.page_count - f.freelist_count) * p.page_size
			FROM pragma_page_count AS c, pragma_freelist_count AS f, pragma_page_size AS p`,
	},
	{
		`SELECT changes(), total_changes(), last_insert_rowid(), schema_version FROM pragma_schema_version`,
		`SELECT changes(), total_changes(), last_insert_rowid(), (c.page_count - f.freelist_count) * p.page_size, s.schema_version
			FROM pragma_page_count AS c, pragma_freelist_count AS f, pragma_page_size AS p, pragma_schema_version AS s`,
	},
}

// counters reads the counters; the schema version is kept from prev unless
// schema asks for it, the size is read when size asks for it.
func (cn *conn) counters(ctx context.Context, prev counters, schema, size bool) (counters, error) {
	var v [5]int64
	n := 3
	if size {
		n++
	}
	if schema {
		n++
	}
	err := cn.scanInts(ctx, countersSQL[b2i(schema)][b2i(size)], v[:n])
	c := counters{changes: v[0], total: v[1], lastRowID: v[2], schema: prev.schema}
	if size {
		c.size = v[3]
	}
	if schema {
		c.schema = v[n-1]
	}
	return c, err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// changesSchema reports whether a statement of verb v may change the
// schema (rows statements cannot, nor can their triggers).
func changesSchema(v Verb) bool {
	switch v {
	case VerbSelect, VerbExplain, VerbInsert, VerbReplace, VerbUpdate, VerbDelete:
		return false
	}
	return true
}

const usedBytesSQL = `SELECT page_count - freelist_count, page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size`

// usedBytes is the size of the database's pages in use.
func (cn *conn) usedBytes(ctx context.Context) (int64, error) {
	var v [2]int64
	err := cn.scanInts(ctx, usedBytesSQL, v[:])
	return v[0] * v[1], err
}

// scanInts reads one row of integers.
func (cn *conn) scanInts(ctx context.Context, q string, into []int64) error {
	dr, err := cn.QueryContext(ctx, q, nil)
	if err != nil {
		return err
	}
	defer dr.Close()
	dest := make([]driver.Value, len(into))
	if err := dr.Next(dest); err != nil {
		return fmt.Errorf("databases: %s: %w", q, err)
	}
	for i, v := range dest {
		into[i], _ = v.(int64)
	}
	return nil
}

// measure reads the database's size on a read-only connection.
func (h *handle) measure(ctx context.Context) (int64, error) {
	c, err := h.readers.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var size int64
	err = c.Raw(func(dc any) error {
		var err error
		size, err = dc.(*conn).usedBytes(ctx)
		return err
	})
	return size, err
}
