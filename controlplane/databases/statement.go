package databases

import "strconv"

// Verb is what a statement does, read from its leading keyword (and, for
// WITH, from the keyword of the statement its common table expressions
// introduce).
type Verb uint8

// The verbs the service tells apart.
const (
	VerbOther       Verb = iota // ATTACH, DETACH, ... and anything unknown
	VerbSelect                  // SELECT, VALUES, WITH ... SELECT
	VerbExplain                 // EXPLAIN [QUERY PLAN] ...: never runs the statement
	VerbInsert                  // INSERT (with or without ON CONFLICT: the spec's UPSERT)
	VerbReplace                 // REPLACE INTO
	VerbUpdate                  // UPDATE
	VerbDelete                  // DELETE
	VerbCreate                  // CREATE TABLE, INDEX, VIEW, TRIGGER, VIRTUAL TABLE
	VerbAlter                   // ALTER TABLE
	VerbDrop                    // DROP ...
	VerbPragma                  // PRAGMA
	VerbTransaction             // BEGIN, COMMIT, END, ROLLBACK: refused, a request is a transaction
	VerbSavepoint               // SAVEPOINT, RELEASE, ROLLBACK TO: fine inside the request's transaction
	VerbVacuum                  // VACUUM: refused, it cannot run inside a transaction nor copy the file
	VerbAnalyze                 // ANALYZE: writes statistics rows (sqlite_stat1, sqlite_stat4)
	VerbReindex                 // REINDEX: rewrites indexes
)

var verbNames = [...]string{"other", "select", "explain", "insert", "replace", "update", "delete", "create", "alter", "drop", "pragma", "transaction", "savepoint", "vacuum", "analyze", "reindex"}

// String names the verb.
func (v Verb) String() string {
	if int(v) < len(verbNames) {
		return verbNames[v]
	}
	return "verb(" + strconv.Itoa(int(v)) + ")"
}

// Statement is one SQL statement of a request.
type Statement struct {
	// SQL is the statement's text, from its first token through its
	// terminating semicolon (when it has one).
	SQL string
	// Offset is where SQL starts in the text it was split from.
	Offset int
	// Verb is what the statement does.
	Verb Verb
	// Vars is how many values the statement binds: SQLite's
	// sqlite3_bind_parameter_count (the largest ?NNN, each ? and each
	// distinct :name, @name or $name counted in order).
	Vars int
}

// AddsData reports whether the statement is one the storage hold stops:
// INSERT (UPSERT included), REPLACE, UPDATE, CREATE and ALTER, also when
// introduced by WITH; ANALYZE (it writes statistics rows) and REINDEX (it
// rewrites indexes); and any statement whose verb is not known. DELETE is
// held separately, on databases where it can add data (triggers,
// foreign-key actions SET NULL and SET DEFAULT); whatever runs is also held
// by its effect, measured inside its transaction.
func (st Statement) AddsData() bool {
	switch st.Verb {
	case VerbInsert, VerbReplace, VerbUpdate, VerbCreate, VerbAlter, VerbAnalyze, VerbReindex, VerbOther:
		return true
	}
	return false
}

// ReadOnly reports whether the statement only reads: it may run on a
// read-only connection. It is a routing hint; the read-only connections
// refuse any write, so a wrong guess is retried on the writer.
func (st Statement) ReadOnly() bool { return st.Verb == VerbSelect || st.Verb == VerbExplain }

// The token classes of SQLite's sqlite3_complete() state machine.
const (
	tkSemi = iota
	tkWS
	tkOther
	tkExplain
	tkCreate
	tkTemp
	tkTrigger
	tkEnd
)

// Its states; a semicolon that leads back to stStart ends a statement.
const (
	stInvalid = iota
	stStart
	stNormal
	stExplain
	stCreate
	stTrigger
	stSemi
	stEnd
)

// completeTrans is sqlite3_complete()'s transition table (src/complete.c):
// a semicolon inside CREATE TRIGGER ... BEGIN ... END does not end the
// statement.
var completeTrans = [8][8]uint8{
	/*             SEMI     WS       OTHER      EXPLAIN    CREATE    TEMP       TRIGGER    END */
	stInvalid: {stStart, stInvalid, stNormal, stExplain, stCreate, stNormal, stNormal, stNormal},
	stStart:   {stStart, stStart, stNormal, stExplain, stCreate, stNormal, stNormal, stNormal},
	stNormal:  {stStart, stNormal, stNormal, stNormal, stNormal, stNormal, stNormal, stNormal},
	stExplain: {stStart, stExplain, stExplain, stNormal, stCreate, stNormal, stNormal, stNormal},
	stCreate:  {stStart, stCreate, stNormal, stNormal, stNormal, stCreate, stTrigger, stNormal},
	stTrigger: {stSemi, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger},
	stSemi:    {stSemi, stSemi, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger, stEnd},
	stEnd:     {stStart, stEnd, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger, stTrigger},
}

// Split cuts sql into its statements the way SQLite reads them, skipping
// empty ones (lone semicolons, comments). Inside a trigger body it also
// pairs CASE with END, which sqlite3_complete() does not, so that
// "... CASE WHEN x THEN 1 END; END;" stays one statement.
func Split(sql string) []Statement {
	var out []Statement
	state, caseDepth := stStart, 0
	start, last := -1, 0 // first and end of last non-space token of the current statement
	for i := 0; i < len(sql); {
		t := nextToken(sql, i)
		i = t.end
		class := tkOther
		switch t.kind {
		case tokSpace:
			class = tkWS
		case tokSemi:
			class = tkSemi
		case tokWord:
			class = wordClass(sql, t)
			inTrigger := state == stTrigger || state == stSemi || state == stEnd
			if inTrigger && keyword(sql, t, "CASE") {
				caseDepth++
			} else if inTrigger && class == tkEnd && caseDepth > 0 {
				caseDepth--
				class = tkOther
			}
		}
		if class != tkWS {
			if start < 0 && class != tkSemi {
				start = t.start
			}
			last = t.end
		}
		state = int(completeTrans[state][class])
		if class == tkSemi && state == stStart {
			if start >= 0 {
				out = append(out, classify(sql[start:last], start))
			}
			start, caseDepth = -1, 0
		}
	}
	if start >= 0 {
		out = append(out, classify(sql[start:last], start))
	}
	return out
}

func wordClass(s string, t token) int {
	switch {
	case keyword(s, t, "EXPLAIN"):
		return tkExplain
	case keyword(s, t, "CREATE"):
		return tkCreate
	case keyword(s, t, "TEMP"), keyword(s, t, "TEMPORARY"):
		return tkTemp
	case keyword(s, t, "TRIGGER"):
		return tkTrigger
	case keyword(s, t, "END"):
		return tkEnd
	}
	return tkOther
}

// leadingVerbs maps a statement's first keyword to its verb.
var leadingVerbs = []struct {
	kw   string
	verb Verb
}{
	{"SELECT", VerbSelect}, {"VALUES", VerbSelect}, {"EXPLAIN", VerbExplain},
	{"INSERT", VerbInsert}, {"REPLACE", VerbReplace}, {"UPDATE", VerbUpdate}, {"DELETE", VerbDelete},
	{"CREATE", VerbCreate}, {"ALTER", VerbAlter}, {"DROP", VerbDrop}, {"PRAGMA", VerbPragma},
	{"BEGIN", VerbTransaction}, {"COMMIT", VerbTransaction}, {"END", VerbTransaction}, {"ROLLBACK", VerbTransaction},
	{"SAVEPOINT", VerbSavepoint}, {"RELEASE", VerbSavepoint}, {"VACUUM", VerbVacuum},
	{"ANALYZE", VerbAnalyze}, {"REINDEX", VerbReindex},
}

// classify reads the verb and the parameter count of one statement.
func classify(sql string, offset int) Statement {
	st := Statement{SQL: sql, Offset: offset}
	toks := make([]token, 0, 16)
	for i := 0; i < len(sql); {
		t := nextToken(sql, i)
		i = t.end
		if t.kind != tokSpace {
			toks = append(toks, t)
		}
	}
	st.Vars = countVars(sql, toks)
	if len(toks) == 0 {
		return st
	}
	first := toks[0]
	for _, lv := range leadingVerbs {
		if keyword(sql, first, lv.kw) {
			st.Verb = lv.verb
			break
		}
	}
	switch {
	case keyword(sql, first, "WITH"):
		st.Verb = mainVerb(sql, toks[1:])
	case keyword(sql, first, "ROLLBACK"):
		// ROLLBACK [TRANSACTION] TO [SAVEPOINT] name undoes to a savepoint.
		for _, t := range toks[1:min(len(toks), 3)] {
			if keyword(sql, t, "TO") {
				st.Verb = VerbSavepoint
			}
		}
	}
	return st
}

// mainVerb finds the statement a WITH clause introduces: the first of
// SELECT, VALUES, INSERT, REPLACE INTO, UPDATE or DELETE outside the
// parentheses of the common table expressions. REPLACE counts only before
// INTO, since it may also name a table expression.
func mainVerb(sql string, toks []token) Verb {
	depth := 0
	for i, t := range toks {
		switch t.kind {
		case tokLParen:
			depth++
		case tokRParen:
			depth--
		case tokWord:
			if depth != 0 {
				continue
			}
			switch {
			case keyword(sql, t, "SELECT"), keyword(sql, t, "VALUES"):
				return VerbSelect
			case keyword(sql, t, "INSERT"):
				return VerbInsert
			case keyword(sql, t, "UPDATE"):
				return VerbUpdate
			case keyword(sql, t, "DELETE"):
				return VerbDelete
			case keyword(sql, t, "REPLACE") && i+1 < len(toks) && keyword(sql, toks[i+1], "INTO"):
				return VerbReplace
			}
		}
	}
	return VerbOther
}

// maxVarIndex bounds ?NNN so that a huge number cannot overflow; SQLite
// refuses anything above its variable limit anyway.
const maxVarIndex = 1 << 20

// countVars computes sqlite3_bind_parameter_count from the tokens.
func countVars(sql string, toks []token) int {
	n := 0
	var named map[string]bool
	for _, t := range toks {
		if t.kind != tokVar {
			continue
		}
		text := sql[t.start:t.end]
		switch {
		case text == "?":
			n++
		case text[0] == '?':
			idx := maxVarIndex
			if len(text) <= 8 {
				idx, _ = strconv.Atoi(text[1:])
			}
			n = max(n, min(idx, maxVarIndex))
		default:
			if named == nil {
				named = map[string]bool{}
			}
			if !named[text] {
				named[text] = true
				n++
			}
		}
	}
	return n
}
