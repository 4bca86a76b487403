package vectors

import (
	"errors"
	"math"
	"strconv"
)

// Numbers is a JSON array of numbers read straight into float32, without
// a reflective decode per element (decoding is most of an upsert's CPU).
// encoding/json has validated the array before UnmarshalJSON sees it.
type Numbers struct {
	vals []float32
	// bad is the index of the first value that is not a finite float32
	// (-1 when none), and badText its text.
	bad     int
	badText string
}

// errNotNumbers refuses an array holding something other than numbers.
var errNotNumbers = errors.New("values must be an array of numbers")

// UnmarshalJSON reads the array.
func (n *Numbers) UnmarshalJSON(b []byte) error {
	n.bad = -1
	n.vals = n.vals[:0]
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return errNotNumbers
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		n.vals = []float32{}
		return nil
	}
	for i < len(b) {
		start := i
		for i < len(b) && b[i] != ',' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		tok := b[start:i]
		if len(tok) == 0 || tok[0] != '-' && (tok[0] < '0' || tok[0] > '9') {
			return errNotNumbers
		}
		f, err := strconv.ParseFloat(string(tok), 32)
		if (err != nil || math.IsInf(f, 0) || math.IsNaN(f)) && n.bad < 0 {
			n.bad, n.badText = len(n.vals), string(tok)
		}
		n.vals = append(n.vals, float32(f))
		i = skipSpace(b, i)
		if i >= len(b) {
			return errNotNumbers
		}
		if b[i] == ']' {
			return nil
		}
		i = skipSpace(b, i+1) // the comma
	}
	return errNotNumbers
}

// MarshalJSON writes the array (for OpenAPI examples and clients in Go).
func (n Numbers) MarshalJSON() ([]byte, error) {
	out := []byte{'['}
	for i, v := range n.vals {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendFloat(out, float64(v), 'g', -1, 32)
	}
	return append(out, ']'), nil
}

// NewNumbers wraps values (clients in Go, tests).
func NewNumbers(v []float32) *Numbers { return &Numbers{vals: v, bad: -1} }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
