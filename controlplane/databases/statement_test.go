package databases

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  string
		want []string
	}{
		{"one", "SELECT 1", []string{"SELECT 1"}},
		{"two", "SELECT 1; SELECT 2;", []string{"SELECT 1;", "SELECT 2;"}},
		{"empty statements", ";;  ;\n-- only a comment\n", nil},
		{"leading comment", "/* c */ -- d\n INSERT INTO t VALUES(1)", []string{"INSERT INTO t VALUES(1)"}},
		{"semicolon in string", "INSERT INTO t VALUES('a;b'); SELECT 2", []string{"INSERT INTO t VALUES('a;b');", "SELECT 2"}},
		{"semicolon in names", `SELECT "a;b", [c;d], ` + "`e;f`" + `; SELECT 2`, []string{`SELECT "a;b", [c;d], ` + "`e;f`;", "SELECT 2"}},
		{"semicolon in comments", "SELECT 1 -- ;\n + 1 /* ; */; SELECT 2", []string{"SELECT 1 -- ;\n + 1 /* ; */;", "SELECT 2"}},
		{"doubled quotes", "SELECT 'it''s;'; SELECT \"a\"\";\"", []string{"SELECT 'it''s;';", "SELECT \"a\"\";\""}},
		{"trigger", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO u VALUES(1); UPDATE u SET a = 2; END; SELECT 1",
			[]string{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO u VALUES(1); UPDATE u SET a = 2; END;", "SELECT 1"}},
		{"temp trigger", "create temp trigger tr after delete on t begin delete from u; end;select 1",
			[]string{"create temp trigger tr after delete on t begin delete from u; end;", "select 1"}},
		{"case in trigger", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET a = CASE WHEN new.x THEN 1 ELSE 2 END; END; SELECT 2",
			[]string{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET a = CASE WHEN new.x THEN 1 ELSE 2 END; END;", "SELECT 2"}},
		{"explain create trigger", "EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; SELECT 2",
			[]string{"EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;", "SELECT 2"}},
		{"case outside trigger", "SELECT CASE WHEN 1 THEN 2 END; SELECT 3", []string{"SELECT CASE WHEN 1 THEN 2 END;", "SELECT 3"}},
		{"unterminated string", "SELECT 'abc; SELECT 2", []string{"SELECT 'abc; SELECT 2"}},
		{"unterminated comment", "SELECT 1 /* ; SELECT 2", []string{"SELECT 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.sql)
			var texts []string
			for _, st := range got {
				texts = append(texts, st.SQL)
			}
			if strings.Join(texts, "|") != strings.Join(tc.want, "|") || len(texts) != len(tc.want) {
				t.Fatalf("Split(%q) = %q, want %q", tc.sql, texts, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		sql      string
		verb     Verb
		adds     bool
		readOnly bool
		vars     int
	}{
		{"SELECT * FROM t WHERE a = ?", VerbSelect, false, true, 1},
		{"values (1), (2)", VerbSelect, false, true, 0},
		{"SELECT 'INSERT INTO t VALUES(1)'", VerbSelect, false, true, 0},
		{`SELECT "update", [create], ` + "`alter`" + ` FROM t`, VerbSelect, false, true, 0},
		{"SELECT replace(a, 'x', 'y') FROM t", VerbSelect, false, true, 0},
		{"-- INSERT\n/* UPDATE */ SELECT 1", VerbSelect, false, true, 0},
		{"INSERT INTO t VALUES (?, ?)", VerbInsert, true, false, 2},
		{"insert into t(a) values(1) on conflict(a) do update set b = excluded.b", VerbInsert, true, false, 0},
		{"INSERT OR REPLACE INTO t VALUES (1)", VerbInsert, true, false, 0},
		{"REPLACE INTO t VALUES (1)", VerbReplace, true, false, 0},
		{"UPDATE t SET a = :a WHERE b = :b OR c = :a", VerbUpdate, true, false, 2},
		{"CREATE TABLE t(a)", VerbCreate, true, false, 0},
		{"CREATE INDEX i ON t(a)", VerbCreate, true, false, 0},
		{"ALTER TABLE t ADD COLUMN b", VerbAlter, true, false, 0},
		{"DELETE FROM t WHERE a = ?3", VerbDelete, false, false, 3},
		{"DROP TABLE t", VerbDrop, false, false, 0},
		{"PRAGMA table_info(t)", VerbPragma, false, false, 0},
		{"EXPLAIN QUERY PLAN INSERT INTO t VALUES(1)", VerbExplain, false, true, 0},
		{"WITH x AS (SELECT 1) SELECT * FROM x", VerbSelect, false, true, 0},
		{"WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM x) INSERT INTO t SELECT n FROM x", VerbInsert, true, false, 0},
		{"WITH x AS MATERIALIZED (SELECT 1) UPDATE t SET a = (SELECT * FROM x)", VerbUpdate, true, false, 0},
		{"WITH x AS (SELECT 1) DELETE FROM t WHERE a IN x", VerbDelete, false, false, 0},
		{"WITH replace AS (SELECT 1) SELECT * FROM replace", VerbSelect, false, true, 0},
		{"WITH x AS (SELECT 1) REPLACE INTO t SELECT * FROM x", VerbReplace, true, false, 0},
		{"WITH x AS (INSERT INTO t VALUES(1)) SELECT 1", VerbSelect, false, true, 0},
		{"BEGIN", VerbTransaction, false, false, 0},
		{"begin immediate transaction", VerbTransaction, false, false, 0},
		{"COMMIT", VerbTransaction, false, false, 0},
		{"END TRANSACTION", VerbTransaction, false, false, 0},
		{"ROLLBACK", VerbTransaction, false, false, 0},
		{"ROLLBACK TO sp", VerbSavepoint, false, false, 0},
		{"ROLLBACK TRANSACTION TO SAVEPOINT sp", VerbSavepoint, false, false, 0},
		{"SAVEPOINT sp", VerbSavepoint, false, false, 0},
		{"VACUUM", VerbVacuum, false, false, 0},
		{"ANALYZE", VerbAnalyze, true, false, 0},
		{"analyze main.t", VerbAnalyze, true, false, 0},
		{"REINDEX t", VerbReindex, true, false, 0},
		{"ATTACH 'x.db' AS x", VerbOther, true, false, 0},
		{"vacuum into 'x.db'", VerbVacuum, false, false, 0},
		{"SELECT ?, ?5, ?, :x, @y, $z, :x", VerbSelect, false, true, 9},
		{"SELECT '?', \"?\", -- ?\n 1", VerbSelect, false, true, 0},
		{"SELECT ?99999999999", VerbSelect, false, true, maxVarIndex},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			st := classify(tc.sql, 0)
			if st.Verb != tc.verb || st.AddsData() != tc.adds || st.ReadOnly() != tc.readOnly || st.Vars != tc.vars {
				t.Fatalf("got verb %s adds %v readOnly %v vars %d; want %s %v %v %d", st.Verb, st.AddsData(), st.ReadOnly(), st.Vars, tc.verb, tc.adds, tc.readOnly, tc.vars)
			}
		})
	}
}

// FuzzSplit checks the splitter on any text: statements come out in order,
// without overlap, each one splitting back to itself, with nothing but
// spaces, comments and semicolons between them.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"SELECT 1; SELECT 2", "INSERT INTO t VALUES('a;b') -- x\n;", `SELECT "a""b", [x], x'00'`,
		"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT CASE WHEN 1 THEN 2 END; END;",
		"/* unterminated", "'unterminated", "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "?1 :a @b $c ?", "1e+5.x 0x1F",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmts := Split(sql)
		pos := 0
		for _, st := range stmts {
			if st.Offset < pos || st.Offset+len(st.SQL) > len(sql) || sql[st.Offset:st.Offset+len(st.SQL)] != st.SQL {
				t.Fatalf("statement %q at %d is not where it claims in %q", st.SQL, st.Offset, sql)
			}
			for i := pos; i < st.Offset; {
				tok := nextToken(sql, i)
				if tok.kind != tokSpace && tok.kind != tokSemi {
					t.Fatalf("token %q between statements of %q", sql[tok.start:tok.end], sql)
				}
				i = tok.end
			}
			again := Split(st.SQL)
			if len(again) != 1 || again[0].SQL != st.SQL || again[0].Verb != st.Verb || again[0].Vars != st.Vars {
				t.Fatalf("statement %q splits into %+v", st.SQL, again)
			}
			pos = st.Offset + len(st.SQL)
		}
		for i := pos; i < len(sql); {
			tok := nextToken(sql, i)
			if tok.kind != tokSpace && tok.kind != tokSemi {
				t.Fatalf("token %q after the last statement of %q", sql[tok.start:tok.end], sql)
			}
			i = tok.end
		}
	})
}

// FuzzAddsData checks that hiding a statement's words in a string literal,
// a quoted name or a comment never makes it count as adding data.
func FuzzAddsData(f *testing.F) {
	for _, s := range []string{"INSERT INTO t VALUES(1)", "UPDATE t SET a=1", "CREATE TABLE t(a)", "x' --", "*/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, words string) {
		for _, wrapped := range []string{
			"SELECT '" + strings.ReplaceAll(words, "'", "''") + "'",
			`SELECT "` + strings.ReplaceAll(words, `"`, `""`) + `"`,
			"SELECT 1 /* " + strings.ReplaceAll(words, "*", "") + " */",
			"SELECT 1 -- " + strings.NewReplacer("\n", " ", "\r", " ").Replace(words),
		} {
			stmts := Split(wrapped)
			if len(stmts) != 1 || stmts[0].AddsData() || stmts[0].Verb != VerbSelect {
				t.Fatalf("%q classified as %+v", wrapped, stmts)
			}
		}
	})
}
