package buckets

import (
	"context"
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// MaxListKeys bounds one page of a listing (S3's max-keys limit).
const MaxListKeys = 1000

// listQuery asks for one page of a bucket's listing.
type listQuery struct {
	// Prefix keeps the keys that start with it.
	Prefix string
	// Delimiter, when set, rolls the keys whose rest after Prefix holds it
	// into one common prefix each (up to and including the delimiter).
	Delimiter string
	// Token continues a previous page (opaque, from listing.Next).
	Token string
	// StartAfter starts after this key when Token is empty (S3's
	// start-after).
	StartAfter string
	// Max is the most objects and common prefixes together (0..MaxListKeys).
	Max int
}

// listing is one page of a listing: objects and common prefixes in key
// order, merged.
type listing struct {
	Objects   []objectRow
	Prefixes  []string
	Truncated bool
	// Next continues the listing after this page ("" when not truncated).
	Next string
}

// errBadToken is a continuation token this area did not make.
func errBadToken() *opError {
	return errInvalidArgument("the continuation token is not one a listing of this bucket returned")
}

// listToken encodes where a page ended: after a key ("k") or after every
// key under a common prefix ("p").
func listToken(kind byte, s string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, s...))
}

func parseListToken(tok string) (kind byte, s string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 2 || (raw[0] != 'k' && raw[0] != 'p') || ValidateKey(string(raw[1:])) != nil {
		return 0, "", false
	}
	return raw[0], string(raw[1:]), true
}

// successor returns the smallest string greater than every string that
// starts with s, in UTF-8 byte order (which is code point order), and
// false when there is none (s is all U+10FFFF or empty). Keys are valid
// UTF-8, so the increment skips the surrogates.
func successor(s string) (string, bool) {
	r := []rune(s)
	for len(r) > 0 {
		c := r[len(r)-1]
		if c < utf8.MaxRune {
			c++
			if c >= 0xD800 && c <= 0xDFFF {
				c = 0xE000
			}
			r[len(r)-1] = c
			return string(r), true
		}
		r = r[:len(r)-1]
	}
	return "", false
}

// list reads one page of b's objects. The listing seeks with the key
// index: past a common prefix it jumps to the prefix's successor instead
// of reading the keys under it.
func (s *Service) list(ctx context.Context, b bucketRow, q listQuery) (listing, error) {
	if !validPrefix(q.Prefix) || !validPrefix(q.Delimiter) || !validPrefix(q.StartAfter) {
		return listing{}, errInvalidArgument("prefix, delimiter and start-after must be valid UTF-8 of at most %d bytes without control characters", MaxKeyBytes)
	}
	if q.Max < 0 || q.Max > MaxListKeys {
		q.Max = MaxListKeys
	}
	from, exclusive := "", false
	if q.Token != "" {
		kind, at, ok := parseListToken(q.Token)
		if !ok {
			return listing{}, errBadToken()
		}
		if kind == 'k' {
			from, exclusive = at, true
		} else if from, ok = successor(at); !ok {
			return listing{}, nil
		}
	} else if q.StartAfter != "" {
		from, exclusive = q.StartAfter, true
	}
	if q.Prefix != "" && from < q.Prefix {
		from, exclusive = q.Prefix, false
	}
	until := ""
	if q.Prefix != "" {
		until, _ = successor(q.Prefix)
	}
	if q.Max == 0 {
		return listing{}, nil
	}

	type item struct {
		obj *objectRow
		cp  string
	}
	var items []item
	batch := q.Max + 1
	for done := false; !done && len(items) <= q.Max; {
		rows, err := listObjectRows(ctx, s.d.DB, b.ID, from, exclusive, until, batch)
		if err != nil {
			return listing{}, errInternal(err)
		}
		done = len(rows) < batch
		skip := ""
		for i := range rows {
			o := &rows[i]
			if !strings.HasPrefix(o.Key, q.Prefix) {
				done = true
				break
			}
			if skip != "" && strings.HasPrefix(o.Key, skip) {
				continue
			}
			if q.Delimiter != "" {
				if j := strings.Index(o.Key[len(q.Prefix):], q.Delimiter); j >= 0 {
					cp := o.Key[:len(q.Prefix)+j+len(q.Delimiter)]
					items = append(items, item{cp: cp})
					skip = cp
					next, ok := successor(cp)
					if !ok {
						done = true
						break
					}
					from, exclusive = next, false
					if len(items) > q.Max {
						break
					}
					continue
				}
			}
			items = append(items, item{obj: o})
			from, exclusive = o.Key, true
			if len(items) > q.Max {
				break
			}
		}
	}
	var out listing
	if len(items) > q.Max {
		out.Truncated = true
		items = items[:q.Max]
		last := items[len(items)-1]
		if last.obj != nil {
			out.Next = listToken('k', last.obj.Key)
		} else {
			out.Next = listToken('p', last.cp)
		}
	}
	for _, it := range items {
		if it.obj != nil {
			out.Objects = append(out.Objects, *it.obj)
		} else {
			out.Prefixes = append(out.Prefixes, it.cp)
		}
	}
	return out, nil
}
