// Package filter is the metadata filter language of vector queries, with
// Cloudflare Vectorize's syntax and semantics:
//
//	{"genre": "drama", "year": {"$gte": 1990, "$lt": 2000}, "author.country": {"$in": ["fr", "be"]}}
//
// A filter is a non-empty JSON object whose compact form is under 2,048
// bytes. Each key names a metadata field (dots reach into nested objects;
// keys cannot be empty, contain a double quote, start with $ or exceed 512
// characters); the fields are ANDed. A value is either a plain value
// (implicit $eq) or an object of operators: $eq, $ne (a string, number,
// boolean or null), $in, $nin (a non-empty array of those), $lt, $lte,
// $gt, $gte (a string or a number). Range operators combine only as one
// lower bound with one upper bound; every other combination, nested
// objects and unknown operators are refused.
package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Limits of the language (Vectorize's).
const (
	// MaxBytes bounds the compact JSON of a filter (it must be shorter).
	MaxBytes = 2048
	// MaxKeyLen bounds a field name.
	MaxKeyLen = 512
	// MaxDepth bounds the dotted segments of a field name.
	MaxDepth = 8
	// StringPrefix is how many bytes of a string an index holds and
	// compares (cut on a UTF-8 boundary).
	StringPrefix = 64
)

// ErrInvalid is wrapped by every refusal of Parse.
var ErrInvalid = errors.New("filter: invalid")

// Error is a refusal with the field it concerns ("" for the whole filter).
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "filter: " + e.Msg
	}
	return fmt.Sprintf("filter: field %q: %s", e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func fail(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Kind is the type of a value.
type Kind uint8

// The kinds of value. Other marks an indexed field holding a value of a
// type the index does not hold (an array, an object, another type): it is
// in the index but equal to nothing and in no range.
const (
	Null Kind = iota
	String
	Number
	Bool
	Other
)

// Value is one scalar.
type Value struct {
	Kind Kind
	S    string
	N    float64
	B    bool
}

// Op is an operator.
type Op uint8

// The operators.
const (
	Eq Op = iota
	Ne
	In
	Nin
	Lt
	Lte
	Gt
	Gte
)

var opNames = map[string]Op{"$eq": Eq, "$ne": Ne, "$in": In, "$nin": Nin, "$lt": Lt, "$lte": Lte, "$gt": Gt, "$gte": Gte}

// Cond is one operator with its operand.
type Cond struct {
	Op  Op
	V   Value
	Set []Value
}

// Clause is the conditions on one field, all of which must hold.
type Clause struct {
	Field string
	Path  []string
	Conds []Cond
}

// Filter is a parsed filter: every clause must hold.
type Filter struct {
	Clauses []Clause
}

// Parse reads a filter. Errors wrap ErrInvalid and say what to fix.
func Parse(raw []byte) (*Filter, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fail("", "not valid JSON: %v", err)
	}
	if compact.Len() >= MaxBytes {
		return nil, fail("", "is %d bytes of compact JSON; it must be under %d", compact.Len(), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(compact.Bytes()))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, fail("", "not valid JSON: %v", err)
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, fail("", "must be a JSON object of field names")
	}
	if len(obj) == 0 {
		return nil, fail("", "is empty; omit it or name a field")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := &Filter{}
	for _, k := range keys {
		c, err := parseClause(k, obj[k])
		if err != nil {
			return nil, err
		}
		f.Clauses = append(f.Clauses, c)
	}
	return f, nil
}

func parseClause(key string, v any) (Clause, error) {
	switch {
	case key == "":
		return Clause{}, fail(key, "a field name cannot be empty")
	case len(key) > MaxKeyLen:
		return Clause{}, fail(key[:32]+"...", "a field name is at most %d characters", MaxKeyLen)
	case strings.HasPrefix(key, "$"):
		return Clause{}, fail(key, "a field name cannot start with $ (operators go inside a field's object, and $and/$or are not supported: fields are ANDed)")
	case strings.Contains(key, `"`):
		return Clause{}, fail(key, "a field name cannot contain a double quote")
	}
	path := strings.Split(key, ".")
	if len(path) > MaxDepth {
		return Clause{}, fail(key, "nested too deep: at most %d dotted levels", MaxDepth)
	}
	for _, p := range path {
		if p == "" {
			return Clause{}, fail(key, "empty segment in a dotted field name")
		}
	}
	c := Clause{Field: key, Path: path}
	ops, isObj := v.(map[string]any)
	if !isObj {
		val, err := scalar(key, "$eq", v, true)
		if err != nil {
			return Clause{}, err
		}
		c.Conds = []Cond{{Op: Eq, V: val}}
		return c, nil
	}
	if len(ops) == 0 {
		return Clause{}, fail(key, "empty operator object")
	}
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	var lower, upper, other int
	for _, n := range names {
		op, known := opNames[n]
		if !known {
			if strings.HasPrefix(n, "$") {
				return Clause{}, fail(key, "unknown operator %s (use $eq, $ne, $in, $nin, $lt, $lte, $gt or $gte)", n)
			}
			return Clause{}, fail(key, "nested too deep: an object value must hold operators; reach nested fields with a dotted name such as %q", key+"."+n)
		}
		cond := Cond{Op: op}
		switch op {
		case Eq, Ne:
			val, err := scalar(key, n, ops[n], true)
			if err != nil {
				return Clause{}, err
			}
			cond.V = val
			other++
		case In, Nin:
			arr, ok := ops[n].([]any)
			if !ok || len(arr) == 0 {
				return Clause{}, fail(key, "%s takes a non-empty array", n)
			}
			for _, x := range arr {
				val, err := scalar(key, n, x, true)
				if err != nil {
					return Clause{}, err
				}
				cond.Set = append(cond.Set, val)
			}
			other++
		default:
			val, err := scalar(key, n, ops[n], false)
			if err != nil {
				return Clause{}, err
			}
			if val.Kind != String && val.Kind != Number {
				return Clause{}, fail(key, "%s takes a string or a number", n)
			}
			cond.V = val
			if op == Lt || op == Lte {
				upper++
			} else {
				lower++
			}
		}
		c.Conds = append(c.Conds, cond)
	}
	if len(c.Conds) > 1 && (other > 0 || lower > 1 || upper > 1) {
		return Clause{}, fail(key, "operators combine only as one lower bound ($gt or $gte) with one upper bound ($lt or $lte)")
	}
	if lower == 1 && upper == 1 && c.Conds[0].V.Kind != c.Conds[1].V.Kind {
		return Clause{}, fail(key, "both bounds of a range must be of the same type")
	}
	return c, nil
}

// scalar reads an operand: a string, number, boolean or (when nullOK) null.
func scalar(key, op string, v any, nullOK bool) (Value, error) {
	switch x := v.(type) {
	case nil:
		if nullOK {
			return Value{Kind: Null}, nil
		}
	case string:
		return Str(x), nil
	case bool:
		return Value{Kind: Bool, B: x}, nil
	case json.Number:
		n, err := x.Float64()
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return Value{}, fail(key, "%s: %s is not a finite number", op, x)
		}
		return Value{Kind: Number, N: n}, nil
	case map[string]any:
		return Value{}, fail(key, "nested too deep: %s takes a plain value, not an object", op)
	case []any:
		return Value{}, fail(key, "%s takes a single value, not an array (use $in)", op)
	}
	return Value{}, fail(key, "%s takes a string, number, boolean or null", op)
}

// Str is a string value as an index holds it: its first StringPrefix bytes,
// cut on a UTF-8 boundary.
func Str(s string) Value {
	if len(s) > StringPrefix {
		s = s[:StringPrefix]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return Value{Kind: String, S: s}
}

func equal(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case String:
		return a.S == b.S
	case Number:
		return a.N == b.N
	case Bool:
		return a.B == b.B
	case Null:
		return true
	}
	return false
}

// compare orders a against b of the same kind (string or number).
func compare(a, b Value) (int, bool) {
	if a.Kind != b.Kind {
		return 0, false
	}
	switch a.Kind {
	case String:
		return strings.Compare(a.S, b.S), true
	case Number:
		switch {
		case a.N < b.N:
			return -1, true
		case a.N > b.N:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Match tells whether v, a field's indexed value (Null when the field is
// missing or null), meets every condition of the clause.
func (c *Clause) Match(v Value) bool {
	for i := range c.Conds {
		if !c.Conds[i].match(v) {
			return false
		}
	}
	return true
}

func (d *Cond) match(v Value) bool {
	switch d.Op {
	case Eq:
		return equal(v, d.V)
	case Ne:
		return !equal(v, d.V)
	case In, Nin:
		in := false
		for _, s := range d.Set {
			if equal(v, s) {
				in = true
				break
			}
		}
		return in == (d.Op == In)
	}
	c, ok := compare(v, d.V)
	if !ok {
		return false
	}
	switch d.Op {
	case Lt:
		return c < 0
	case Lte:
		return c <= 0
	case Gt:
		return c > 0
	}
	return c >= 0
}

// Operands lists the non-null operand kinds of the clause, to check them
// against the field's index type.
func (c *Clause) Operands() []Kind {
	var out []Kind
	for _, d := range c.Conds {
		if d.V.Kind != Null && d.Set == nil {
			out = append(out, d.V.Kind)
		}
		for _, s := range d.Set {
			if s.Kind != Null {
				out = append(out, s.Kind)
			}
		}
	}
	return out
}

// Lookup resolves a dotted path in a decoded metadata object.
func Lookup(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = obj[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}
