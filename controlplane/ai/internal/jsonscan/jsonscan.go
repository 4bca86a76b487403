// Package jsonscan reads JSON of a known shape without reflection: the AI
// gateway's fast paths (the client's chat request, the upstream's answer
// and stream chunks) scan with it, accept only the exact shape they know
// and leave everything else to encoding/json, whose reading they must
// match (each caller has a fuzz target comparing the two).
package jsonscan

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads B from I.
type Scanner struct {
	B []byte
	I int
}

// WS skips white space.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek returns the next byte after white space (0 at the end).
func (s *Scanner) Peek() byte {
	s.WS()
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Eat consumes c if it comes next.
func (s *Scanner) Eat(c byte) bool {
	if s.Peek() == c {
		s.I++
		return true
	}
	return false
}

// Lit consumes the literal l if it comes next (no white space skipped).
func (s *Scanner) Lit(l string) bool {
	if len(s.B)-s.I < len(l) || string(s.B[s.I:s.I+len(l)]) != l {
		return false
	}
	s.I += len(l)
	return true
}

// Null consumes null.
func (s *Scanner) Null() bool { return s.Peek() == 'n' && s.Lit("null") }

// Bool reads true or false.
func (s *Scanner) Bool() (v, ok bool) {
	switch s.Peek() {
	case 't':
		return true, s.Lit("true")
	case 'f':
		return false, s.Lit("false")
	}
	return false, false
}

// End tells whether only white space is left.
func (s *Scanner) End() bool {
	s.WS()
	return s.I == len(s.B)
}

// Num reads a JSON number and returns its text.
func (s *Scanner) Num() ([]byte, bool) {
	s.WS()
	start := s.I
	digits := func() int {
		n := 0
		for s.I < len(s.B) && s.B[s.I] >= '0' && s.B[s.I] <= '9' {
			s.I++
			n++
		}
		return n
	}
	if s.I < len(s.B) && s.B[s.I] == '-' {
		s.I++
	}
	if s.I < len(s.B) && s.B[s.I] == '0' {
		s.I++
	} else if digits() == 0 {
		return nil, false
	}
	if s.I < len(s.B) && s.B[s.I] == '.' {
		s.I++
		if digits() == 0 {
			return nil, false
		}
	}
	if s.I < len(s.B) && (s.B[s.I] == 'e' || s.B[s.I] == 'E') {
		s.I++
		if s.I < len(s.B) && (s.B[s.I] == '+' || s.B[s.I] == '-') {
			s.I++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return s.B[start:s.I], true
}

// Int64 reads a whole number that fits int64: what encoding/json puts in
// an integer field (a fraction or an exponent there is its error).
func (s *Scanner) Int64() (int64, bool) {
	v, ok := s.Num()
	if !ok {
		return 0, false
	}
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Float64 reads a number as encoding/json reads it into a float64.
func (s *Scanner) Float64() (float64, bool) {
	v, ok := s.Num()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// Str reads a string without escapes and returns its bytes (in B).
func (s *Scanner) Str() ([]byte, bool) {
	if !s.Eat('"') {
		return nil, false
	}
	start, ascii := s.I, true
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			v := s.B[start:s.I]
			s.I++
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		s.I++
	}
	return nil, false
}

// StrOrNull reads a string without escapes (isStr) or null.
func (s *Scanner) StrOrNull() (v []byte, isStr, ok bool) {
	if s.Peek() == 'n' {
		return nil, false, s.Lit("null")
	}
	v, ok = s.Str()
	return v, ok, ok
}

// Text reads a string, decoding escapes as encoding/json does, or null
// (isStr false). Without escapes v points into B; with them it is a new
// slice. Invalid UTF-8 and unpaired surrogates, which encoding/json
// replaces with U+FFFD, are refused (ok false).
func (s *Scanner) Text() (v []byte, isStr, ok bool) {
	if s.Peek() == 'n' {
		return nil, false, s.Lit("null")
	}
	if !s.Eat('"') {
		return nil, false, false
	}
	start, ascii := s.I, true
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			raw := s.B[start:s.I]
			s.I++
			if !ascii && !utf8.Valid(raw) {
				return nil, false, false
			}
			return raw, true, true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return nil, false, false
		case c >= 0x80:
			ascii = false
		}
		s.I++
	}
	return nil, false, false
}

// escaped finishes a string that began at start and holds an escape at I.
func (s *Scanner) escaped(start int) ([]byte, bool, bool) {
	out := make([]byte, 0, len(s.B)-start)
	out = append(out, s.B[start:s.I]...)
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			s.I++
			if !utf8.Valid(out) {
				return nil, false, false
			}
			return out, true, true
		case c < 0x20:
			return nil, false, false
		case c != '\\':
			out = append(out, c)
			s.I++
			continue
		}
		if s.I+1 >= len(s.B) {
			return nil, false, false
		}
		e := s.B[s.I+1]
		s.I += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, false, false
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by a low one.
				if r >= 0xdc00 || s.I+1 >= len(s.B) || s.B[s.I] != '\\' || s.B[s.I+1] != 'u' {
					return nil, false, false
				}
				s.I += 2
				r2, ok := s.hex4()
				if !ok || r2 < 0xdc00 || r2 > 0xdfff {
					return nil, false, false
				}
				r = utf16.DecodeRune(r, r2)
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false, false
		}
	}
	return nil, false, false
}

func (s *Scanner) hex4() (rune, bool) {
	if len(s.B)-s.I < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.B[s.I : s.I+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.I += 4
	return r, true
}

// Object reads {"key": value, ...} whose keys are among keys (at most 32;
// exact spelling, each once, without escapes), calling field with the
// key's entry in keys (no allocation); field reads the value and says
// whether it was acceptable.
func (s *Scanner) Object(keys []string, field func(key string) bool) bool {
	if !s.Eat('{') {
		return false
	}
	if s.Eat('}') {
		return true
	}
	var seen uint32
	for {
		k, ok := s.Str()
		if !ok || !s.Eat(':') {
			return false
		}
		idx := -1
		for i, c := range keys {
			if string(k) == c {
				idx = i
				break
			}
		}
		if idx < 0 || idx >= 32 || seen&(1<<idx) != 0 {
			return false
		}
		seen |= 1 << idx
		if !field(keys[idx]) {
			return false
		}
		if s.Eat('}') {
			return true
		}
		if !s.Eat(',') {
			return false
		}
	}
}
