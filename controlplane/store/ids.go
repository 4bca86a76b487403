package store

import (
	"crypto/rand"
	"time"
)

// idAlphabet is lower-case Crockford-like base32: no i, l, o, u.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns prefix + "_" + 20 random base32 characters (100 bits), the
// Stripe-style identifier every resource uses (prj_..., key_..., mem_...).
func NewID(prefix string) string {
	var b [20]byte
	rand.Read(b[:])
	out := make([]byte, 0, len(prefix)+1+len(b))
	out = append(out, prefix...)
	out = append(out, '_')
	for _, c := range b {
		out = append(out, idAlphabet[c&31])
	}
	return string(out)
}

// TimeFormat is how times are stored: RFC 3339 in UTC with milliseconds, so
// that text order is time order.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t for storage.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime reads a stored time; an empty string is the zero time.
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(TimeFormat, s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t.UTC()
}

// Boxes puts each distinct string in an interface once. Batch writers
// pass the same few workspaces, models and statuses in every row of a
// multi-row INSERT, and converting each occurrence to `any` allocates.
type Boxes map[string]any

// Box returns s as an interface value, the same one for every equal s.
func (b Boxes) Box(s string) any {
	if s == "" {
		return ""
	}
	v, ok := b[s]
	if !ok {
		v = s
		b[s] = v
	}
	return v
}
