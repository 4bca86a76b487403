package databases

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// The limits SQLite enforces itself on every customer connection
// (sqlite3_limit), set to the specification's numbers. KB and MB are
// decimal, as the specification's GB is.
const (
	// MaxValueBytes bounds one string, blob or row (SQLITE_LIMIT_LENGTH).
	MaxValueBytes = 2_000_000
	// MaxSQLBytes bounds one statement (SQLITE_LIMIT_SQL_LENGTH), and the
	// service applies it to the sql field of a request as a whole.
	MaxSQLBytes = 100_000
	// MaxParams bounds the parameters of one statement
	// (SQLITE_LIMIT_VARIABLE_NUMBER).
	MaxParams = 100
	// MaxColumns bounds the columns of a table, an index or a result
	// (SQLITE_LIMIT_COLUMN).
	MaxColumns = 100
)

// driverName is the database/sql driver customer databases are opened
// with: mattn/go-sqlite3 with a ConnectHook that applies the limits.
const driverName = "sqlite3_customer"

var customerDriver = &sqlite3.SQLiteDriver{ConnectHook: applyLimits}

var registerOnce sync.Once

func registerDriver() { registerOnce.Do(func() { sql.Register(driverName, customerDriver) }) }

// applyLimits sets the specification's limits on a new connection. No
// other database may be attached, so ATTACH (and VACUUM, which attaches a
// temporary copy) fails inside SQLite too.
func applyLimits(c *sqlite3.SQLiteConn) error {
	c.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, MaxValueBytes)
	c.SetLimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MaxSQLBytes)
	c.SetLimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MaxParams)
	c.SetLimit(sqlite3.SQLITE_LIMIT_COLUMN, MaxColumns)
	c.SetLimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
	return nil
}

// conn is a customer connection: the driver's connection (all of its
// methods, so database/sql sees the same optional interfaces) plus what the
// authorizer refused last.
type conn struct {
	*sqlite3.SQLiteConn
	denied string
	// last is the change counters the writer's previous request ended
	// with; nil when unknown.
	last *counters
}

// connector opens customer connections of one database file with the
// per-database settings the global ConnectHook cannot know.
type connector struct {
	dsn  string
	init []string // statements run on each new connection
}

var _ driver.Connector = (*connector)(nil)

// Connect opens a connection: the driver's hook sets the limits, then the
// per-database statements run and the authorizer is installed.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := customerDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc := dc.(*sqlite3.SQLiteConn)
	cn := &conn{SQLiteConn: sc}
	for _, q := range c.init {
		if _, err := sc.ExecContext(ctx, q, nil); err != nil {
			sc.Close()
			return nil, fmt.Errorf("databases: %s: %w", q, err)
		}
	}
	sc.RegisterAuthorizer(cn.authorize)
	return cn, nil
}

// Driver returns the customer driver.
func (c *connector) Driver() driver.Driver { return customerDriver }

// dsn builds the connection string of a customer database file. Every
// connection is WAL with synchronous=FULL (an acknowledged commit survives
// a crash or power loss), enforces foreign keys as D1 does, waits on locks
// rather than failing, and caches prepared statements.
func dsn(path string, create, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "FULL")
	q.Set("_stmt_cache_size", "64")
	q.Set("mode", "rw")
	if create {
		// Incremental auto-vacuum lets PRAGMA incremental_vacuum give free
		// pages back to the file system; it is set before anything else.
		q.Set("mode", "rwc")
		q.Set("_auto_vacuum", "incremental")
	}
	if readOnly {
		q.Set("_query_only", "true")
	} else {
		q.Set("_journal_mode", "WAL")
	}
	return "file:" + path + "?" + q.Encode()
}

// Authorizer action codes not exported by the driver.
const (
	actionFunction = 31
)

// pragmaRule says how a pragma may be used from customer SQL.
type pragmaRule uint8

const (
	pragmaRead pragmaRule = iota + 1 // only without a value: PRAGMA x
	pragmaArg                        // with any argument: introspection taking a name
	pragmaSet                        // read or set
)

// pragmas are the pragmas customer SQL may use; every other one (journal
// mode, synchronous, max_page_count, writable_schema, ...) would undo a
// guarantee of the service and is refused.
var pragmas = map[string]pragmaRule{
	"table_info": pragmaArg, "table_xinfo": pragmaArg, "table_list": pragmaArg,
	"index_list": pragmaArg, "index_info": pragmaArg, "index_xinfo": pragmaArg,
	"foreign_key_list": pragmaArg, "foreign_key_check": pragmaArg,
	"integrity_check": pragmaArg, "quick_check": pragmaArg,
	"collation_list": pragmaRead, "function_list": pragmaRead, "module_list": pragmaRead, "pragma_list": pragmaRead,
	"compile_options": pragmaRead, "data_version": pragmaRead, "schema_version": pragmaRead,
	"page_count": pragmaRead, "page_size": pragmaRead, "freelist_count": pragmaRead, "max_page_count": pragmaRead,
	"encoding": pragmaRead, "foreign_keys": pragmaRead, "auto_vacuum": pragmaRead, "journal_mode": pragmaRead,
	"recursive_triggers": pragmaRead,
	"user_version":       pragmaSet, "application_id": pragmaSet, "defer_foreign_keys": pragmaSet,
	"optimize": pragmaSet, "incremental_vacuum": pragmaSet,
}

// deniedFunctions are SQL functions customer SQL may not call.
var deniedFunctions = map[string]bool{"load_extension": true, "fts3_tokenizer": true}

// authorize is the connection's SQLite authorizer: it refuses what would
// reach outside the one database file or change how it is stored, and
// remembers why for the error message.
func (c *conn) authorize(action int, arg1, arg2, _ string) int {
	deny := func(format string, args ...any) int {
		c.denied = fmt.Sprintf(format, args...)
		return sqlite3.SQLITE_DENY
	}
	switch action {
	case sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH:
		return deny("ATTACH, DETACH and VACUUM are not available: each database is one isolated file (PRAGMA incremental_vacuum returns free pages)")
	case sqlite3.SQLITE_CREATE_TEMP_TABLE, sqlite3.SQLITE_CREATE_TEMP_INDEX, sqlite3.SQLITE_CREATE_TEMP_TRIGGER, sqlite3.SQLITE_CREATE_TEMP_VIEW:
		return deny("temporary tables, indexes, triggers and views are not available: create them in the database itself")
	case sqlite3.SQLITE_PRAGMA:
		name := strings.ToLower(arg1)
		switch pragmas[name] {
		case pragmaArg, pragmaSet:
			return sqlite3.SQLITE_OK
		case pragmaRead:
			if arg2 == "" {
				return sqlite3.SQLITE_OK
			}
			return deny("PRAGMA %s can be read but not set here", name)
		}
		return deny("PRAGMA %s is not available on this platform", name)
	case actionFunction:
		if deniedFunctions[strings.ToLower(arg2)] {
			return deny("function %s is not available", arg2)
		}
	}
	return sqlite3.SQLITE_OK
}
