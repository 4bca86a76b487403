package store

import (
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"none", `SELECT 1`, `SELECT 1`},
		{"sequential", `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{"numbered", `VALUES (?1, ?2, ?1)`, `VALUES ($1, $2, $1)`},
		{"bare after numbered", `VALUES (?3, ?)`, `VALUES ($3, $4)`},
		{"string literal", `SELECT 'a?b', ?`, `SELECT 'a?b', $1`},
		{"escaped quote", `SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{"quoted identifier", `SELECT "we?ird", ?`, `SELECT "we?ird", $1`},
		{"line comment", "SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{"block comment", `SELECT /* a? /* nested? */ b? */ ?`, `SELECT /* a? /* nested? */ b? */ $1`},
		{"dollar quoted", `DO $$ SELECT '?' $$; SELECT ?`, `DO $$ SELECT '?' $$; SELECT $1`},
		{"tagged dollar quote", `SELECT $fn$ ? $fn$, ?`, `SELECT $fn$ ? $fn$, $1`},
		{"positional dollar kept", `SELECT $1, ?`, `SELECT $1, $1`},
		{"dollar inside a name", `SELECT a$b, ?`, `SELECT a$b, $1`},
		{"unterminated literal", `SELECT 'a?`, `SELECT 'a?`},
		{"unterminated comment", `SELECT ? /* ?`, `SELECT $1 /* ?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Rebind(c.in); got != c.want {
				t.Fatalf("Rebind(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// FuzzRebind: Rebind never panics, leaves a query without ? alone, and
// outside quotes and comments every ? becomes a $n.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{`SELECT ?`, `'?' ?`, `"?" ?1 ?`, "-- ?\n?", `/* ? */ ?`, `$a$ ? $a$ ?`, `$1 ?`, `?99999999999999999999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out := Rebind(q)
		if !strings.Contains(q, "?") && out != q {
			t.Fatalf("Rebind changed a query without placeholders: %q -> %q", q, out)
		}
		if strings.Count(out, "?") > strings.Count(q, "?") {
			t.Fatalf("Rebind added question marks: %q -> %q", q, out)
		}
		if !strings.ContainsAny(q, `'"-/$`) && strings.Contains(out, "?") {
			t.Fatalf("a plain ? survived: %q -> %q", q, out)
		}
	})
}
