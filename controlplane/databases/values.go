package databases

import (
	"bytes"
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/internal/jsonesc"
)

// How values travel. A bound parameter is a JSON number (an integer
// literal binds as INTEGER, one with a fraction or exponent as REAL), a
// string (TEXT), null, true or false (INTEGER 1 or 0), or a blob written as
// {"$blob": "<standard base64>"}. Results use the same shapes: INTEGER and
// REAL as numbers, TEXT as strings, NULL as null and BLOB as {"$blob": ...}.

// blobKey is the one member of the object that carries a blob.
const blobKey = "$blob"

// decodeParam turns one JSON value of params into a driver value.
func decodeParam(raw json.RawMessage) (driver.Value, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, api.Invalid("empty parameter")
	}
	switch raw[0] {
	case 'n':
		return nil, nil
	case 't':
		return int64(1), nil
	case 'f':
		return int64(0), nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, api.Invalid("parameter %s is not a valid JSON string", raw)
		}
		return s, nil
	case '{':
		var obj map[string]string
		if err := json.Unmarshal(raw, &obj); err != nil || len(obj) != 1 {
			return nil, api.Invalid(`an object parameter must be {"%s": "<base64>"}`, blobKey)
		}
		enc, ok := obj[blobKey]
		if !ok {
			return nil, api.Invalid(`an object parameter must be {"%s": "<base64>"}`, blobKey)
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, api.Invalid("%s is not standard base64: %v", blobKey, err)
		}
		return b, nil
	case '[':
		return nil, api.Invalid("a parameter cannot be an array; bind one value per ? placeholder")
	}
	s := string(raw)
	if bytes.ContainsAny(raw, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, api.Invalid("parameter %s is not a number SQLite can store", s)
		}
		return f, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, api.Invalid("parameter %s is outside SQLite's 64-bit integer range; send it as a string or a real number", s)
	}
	return n, nil
}

// appendValue appends v as JSON.
func appendValue(b []byte, v driver.Value) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendFloat(b, x)
	case string:
		return jsonesc.Append(b, x)
	case []byte:
		b = append(b, `{"`+blobKey+`":"`...)
		b = base64.StdEncoding.AppendEncode(b, x)
		return append(b, `"}`...)
	case bool: // not produced once declared types are neutralised; kept total
		if x {
			return append(b, '1')
		}
		return append(b, '0')
	case time.Time:
		return jsonesc.Append(b, x.Format(time.RFC3339Nano))
	}
	return append(b, "null"...)
}

// appendFloat formats f as encoding/json does (shortest representation
// that reads back to the same float64). SQLite cannot store NaN; an
// infinity, which JSON cannot carry, is null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// rowEncoder writes result rows as a JSON array of objects whose members
// follow the column order; when two columns share a name the later value
// wins, in the place of the first.
type rowEncoder struct {
	buf   []byte
	names [][]byte // each column's quoted name and colon, nil for a repeated name
	last  []int    // for each column, the index of the column whose value is written
	rows  int
}

func newRowEncoder(cols []string) *rowEncoder {
	e := &rowEncoder{buf: append(make([]byte, 0, 256), '['), names: make([][]byte, len(cols)), last: make([]int, len(cols))}
	seen := make(map[string]int, len(cols))
	for i, c := range cols {
		if j, ok := seen[c]; ok {
			e.last[j] = i
			e.last[i] = -1
			continue
		}
		seen[c] = i
		e.last[i] = i
		e.names[i] = append(jsonesc.Append(nil, c), ':')
	}
	return e
}

// add appends one row.
func (e *rowEncoder) add(vals []driver.Value) {
	if e.rows > 0 {
		e.buf = append(e.buf, ',')
	}
	e.rows++
	e.buf = append(e.buf, '{')
	first := true
	for i, name := range e.names {
		if name == nil {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.buf = append(e.buf, name...)
		e.buf = appendValue(e.buf, vals[e.last[i]])
	}
	e.buf = append(e.buf, '}')
}

// size is how many bytes the rows take so far.
func (e *rowEncoder) size() int { return len(e.buf) }

// json closes the array and returns it.
func (e *rowEncoder) json() json.RawMessage { return append(e.buf, ']') }

// emptyRows is the results of a statement that returns no rows.
var emptyRows = json.RawMessage("[]")
