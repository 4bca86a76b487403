package databases

// The lexer follows SQLite's tokenizer (src/tokenize.c) closely enough to
// tell keywords from everything that only looks like one: string literals
// '...', quoted names "...", `...` and [...], blob literals x'...', comments
// -- and /* */, and parameters ?NNN, :name, @name, $name. It never fails: an
// unterminated literal or comment runs to the end of the input, as it does
// for SQLite, which then reports the error itself.

// tokenKind classifies a token.
type tokenKind uint8

const (
	tokSpace  tokenKind = iota // whitespace or a comment
	tokWord                    // a bare word: keyword or unquoted name
	tokString                  // '...'
	tokQuoted                  // "...", `...` or [...]
	tokBlob                    // x'...'
	tokNumber                  // 12, 1.5e3, 0x1F
	tokVar                     // ?, ?NNN, :name, @name, $name
	tokSemi                    // ;
	tokLParen                  // (
	tokRParen                  // )
	tokOther                   // any other operator or punctuation
)

// token is one lexical token: its kind and its byte range in the input.
type token struct {
	kind       tokenKind
	start, end int
}

// isIDChar reports whether c may continue a bare word; SQLite treats every
// byte at or above 0x80 as part of a name.
func isIDChar(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// isIDStart reports whether c may start a bare word.
func isIDStart(c byte) bool {
	return c >= 0x80 || c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// nextToken returns the token starting at i (i < len(s)).
func nextToken(s string, i int) token {
	c := s[i]
	switch {
	case isSpace(c):
		j := i + 1
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		return token{tokSpace, i, j}
	case c == '-' && i+1 < len(s) && s[i+1] == '-':
		j := i + 2
		for j < len(s) && s[j] != '\n' {
			j++
		}
		return token{tokSpace, i, j}
	case c == '/' && i+1 < len(s) && s[i+1] == '*':
		j := i + 2
		for j+1 < len(s) && !(s[j] == '*' && s[j+1] == '/') {
			j++
		}
		j = min(j+2, len(s))
		return token{tokSpace, i, j}
	case c == '\'':
		return token{tokString, i, quotedEnd(s, i+1, '\'')}
	case c == '"' || c == '`':
		return token{tokQuoted, i, quotedEnd(s, i+1, c)}
	case c == '[':
		j := i + 1
		for j < len(s) && s[j] != ']' {
			j++
		}
		return token{tokQuoted, i, min(j+1, len(s))}
	case (c == 'x' || c == 'X') && i+1 < len(s) && s[i+1] == '\'':
		j := i + 2
		for j < len(s) && s[j] != '\'' {
			j++
		}
		return token{tokBlob, i, min(j+1, len(s))}
	case isIDStart(c):
		j := i + 1
		for j < len(s) && isIDChar(s[j]) {
			j++
		}
		return token{tokWord, i, j}
	case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
		j := i + 1
		for j < len(s) {
			d := s[j]
			if (d == '+' || d == '-') && (s[j-1] == 'e' || s[j-1] == 'E') && !isHex(s, i) {
				j++
				continue
			}
			if !isIDChar(d) && d != '.' {
				break
			}
			j++
		}
		return token{tokNumber, i, j}
	case c == '?':
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return token{tokVar, i, j}
	case c == ':' || c == '@' || c == '$':
		j := i + 1
		for j < len(s) && isIDChar(s[j]) {
			j++
		}
		if j == i+1 {
			return token{tokOther, i, j}
		}
		return token{tokVar, i, j}
	case c == ';':
		return token{tokSemi, i, i + 1}
	case c == '(':
		return token{tokLParen, i, i + 1}
	case c == ')':
		return token{tokRParen, i, i + 1}
	}
	return token{tokOther, i, i + 1}
}

// quotedEnd returns the end of a literal opened by q just before i: the
// delimiter doubled stands for itself.
func quotedEnd(s string, i int, q byte) int {
	for i < len(s) {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// isHex reports whether the number starting at i is a 0x literal.
func isHex(s string, i int) bool {
	return s[i] == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X')
}

// keyword reports whether the word token t is the keyword kw (upper case),
// ignoring ASCII case as SQLite does.
func keyword(s string, t token, kw string) bool {
	if t.kind != tokWord || t.end-t.start != len(kw) {
		return false
	}
	for i := 0; i < len(kw); i++ {
		c := s[t.start+i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != kw[i] {
			return false
		}
	}
	return true
}
