package store

import (
	"strconv"
	"strings"
)

// Dialect is the SQL engine behind a DB. Area code writes one statement
// for both engines (see README.md); the few places that must differ ask
// db.Dialect().
type Dialect int

const (
	// SQLite is the embedded default: one file under the data directory.
	SQLite Dialect = iota
	// Postgres is a PostgreSQL server shared by control-plane replicas.
	Postgres
)

// String returns "sqlite" or "postgres".
func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Rebind rewrites the SQLite-style placeholders of query (? and ?NNN) into
// PostgreSQL's $1, $2, ...; a bare ? takes the number after the largest
// one assigned so far, as SQLite numbers it. Question marks inside string
// literals, quoted identifiers, comments and dollar-quoted bodies are left
// alone. The PostgreSQL connections of a DB apply it to every statement,
// so area code keeps writing ? for both engines.
func Rebind(query string) string {
	if strings.IndexByte(query, '?') < 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	next := 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := skipQuoted(query, i, c)
			b.WriteString(query[i:j])
			i = j
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			j := skipBlockComment(query, i)
			b.WriteString(query[i:j])
			i = j
		case c == '$':
			j := skipDollarQuoted(query, i)
			b.WriteString(query[i:j])
			i = j
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			n := next + 1
			if j > i+1 {
				if v, err := strconv.Atoi(query[i+1 : j]); err == nil && v > 0 {
					n = v
				}
			}
			next = max(next, n)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipQuoted returns the index after the literal or identifier opened by
// quote at i; a doubled quote is an escaped one. An unterminated one runs
// to the end.
func skipQuoted(s string, i int, quote byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == quote {
			if j+1 < len(s) && s[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// skipBlockComment returns the index after the /* ... */ comment at i,
// counting nested comments as PostgreSQL does.
func skipBlockComment(s string, i int) int {
	depth := 0
	for j := i; j+1 < len(s); j++ {
		switch {
		case s[j] == '/' && s[j+1] == '*':
			depth++
			j++
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

// skipDollarQuoted returns the index after the $tag$ ... $tag$ string at
// i, or i+1 when the $ opens none (a $1 parameter, a $ inside a name).
func skipDollarQuoted(s string, i int) int {
	if i > 0 && isIdentByte(s[i-1]) {
		return i + 1
	}
	j := i + 1
	for j < len(s) && s[j] != '$' {
		c := s[j]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > i+1 && c >= '0' && c <= '9') {
			return i + 1
		}
		j++
	}
	if j >= len(s) {
		return i + 1
	}
	tag := s[i : j+1]
	end := strings.Index(s[j+1:], tag)
	if end < 0 {
		return len(s)
	}
	return j + 1 + end + len(tag)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
