package buckets

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// referenceList is what a listing must return, computed from all the keys
// at once: keys with the prefix in byte order, those holding the
// delimiter after the prefix rolled into common prefixes.
func referenceList(keys []string, prefix, delimiter string) (objects, prefixes []string, merged []string) {
	sorted := slices.Clone(keys)
	sort.Strings(sorted)
	seen := map[string]bool{}
	for _, k := range sorted {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delimiter != "" {
			if i := strings.Index(k[len(prefix):], delimiter); i >= 0 {
				cp := k[:len(prefix)+i+len(delimiter)]
				if !seen[cp] {
					seen[cp] = true
					prefixes = append(prefixes, cp)
					merged = append(merged, "P:"+cp)
				}
				continue
			}
		}
		objects = append(objects, k)
		merged = append(merged, "K:"+k)
	}
	return objects, prefixes, merged
}

// walk lists every page of a REST listing and returns the items in order.
func (f *fixture) walk(bucketID, prefix, delimiter string, limit int) []string {
	f.t.Helper()
	var out []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			f.t.Fatal("listing does not end")
		}
		q := url.Values{"prefix": {prefix}, "delimiter": {delimiter}, "limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p ObjectPage
		f.must(http.StatusOK, "viewer", "GET", "/api/buckets/"+bucketID+"/objects?"+q.Encode(), nil).Decode(f.t, &p)
		if len(p.Objects)+len(p.Prefixes) > limit {
			f.t.Fatalf("a page of %d holds %d items", limit, len(p.Objects)+len(p.Prefixes))
		}
		// Objects and prefixes of one page merge in key order.
		var page []string
		for _, o := range p.Objects {
			page = append(page, "K:"+o.Key)
		}
		for _, cp := range p.Prefixes {
			page = append(page, "P:"+cp)
		}
		sort.Slice(page, func(i, j int) bool { return page[i][2:] < page[j][2:] })
		out = append(out, page...)
		if p.NextCursor == nil {
			return out
		}
		if len(page) != limit {
			f.t.Fatalf("a page with a next cursor holds %d of %d items", len(page), limit)
		}
		cursor = *p.NextCursor
	}
}

// TestListing: listings by prefix and delimiter, walked page by page with
// the cursor at several page sizes, give exactly the reference answer;
// pages split inside runs of keys under one common prefix; keys order by
// bytes (UTF-8), on both engines.
func TestListing(t *testing.T) { eachEngine(t, testListing) }

func testListing(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	b := f.bucket("tree", false)
	keys := []string{"a", "a/", "a/b", "a/b/c", "a/b/d", "a/c", "a//x", "a/./y", "ab", "b/1", "b/2", "b/3", "c", "é/1", "é/2",
		"z\U0010FFFF", "z\U0010FFFF/x", "日本/語", "~tilde", "A", "a-b", "a.b"}
	for _, k := range keys {
		f.put(b.ID, k, []byte(k))
	}
	for _, q := range []struct{ prefix, delimiter string }{
		{"", ""}, {"", "/"}, {"a", ""}, {"a/", "/"}, {"a", "/"}, {"a/b", "/"}, {"b/", ""}, {"é", "/"}, {"z\U0010FFFF", "/"},
		{"", "b"}, {"a", "//"}, {"nothing", "/"}, {"", "日"},
	} {
		_, _, want := referenceList(keys, q.prefix, q.delimiter)
		for _, limit := range []int{1, 2, 3, 7} {
			t.Run(q.prefix+"|"+q.delimiter+"|"+strconv.Itoa(limit), func(t *testing.T) {
				got := f.walk(b.ID, q.prefix, q.delimiter, limit)
				if !slices.Equal(got, want) {
					t.Fatalf("listing prefix %q delimiter %q limit %d:\n got %q\nwant %q", q.prefix, q.delimiter, limit, got, want)
				}
			})
		}
	}
}

// TestListingRandom compares listings of random keys (few letters, so
// prefixes and delimiters collide often) with the reference.
func TestListingRandom(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{}, t0)
	b := f.bucket("random", false)
	row, err := getBucket(context.Background(), f.db, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'b', '/', '-', 'é', '\U0010FFFF'}
	word := func(n int) string {
		var s strings.Builder
		for range n {
			s.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return s.String()
	}
	seen := map[string]bool{}
	var keys []string
	for len(keys) < 120 {
		k := word(1 + rng.IntN(6))
		if seen[k] || ValidateKey(k) != nil {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
		f.put(b.ID, k, []byte("x"))
	}
	for i := range 60 {
		prefix, delim := word(rng.IntN(3)), word(rng.IntN(2))
		if !utf8.ValidString(prefix) {
			continue
		}
		_, _, want := referenceList(keys, prefix, delim)
		limit := 1 + rng.IntN(9)
		var got []string
		tok := ""
		for {
			l, err := f.svc.list(context.Background(), row, listQuery{Prefix: prefix, Delimiter: delim, Token: tok, Max: limit})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Objects {
				got = append(got, "K:"+o.Key)
			}
			for _, p := range l.Prefixes {
				got = append(got, "P:"+p)
			}
			if !l.Truncated {
				break
			}
			tok = l.Next
		}
		sort.SliceStable(got, func(i, j int) bool { return got[i][2:] < got[j][2:] })
		if !slices.Equal(got, want) {
			t.Fatalf("case %d prefix %q delimiter %q limit %d:\n got %q\nwant %q", i, prefix, delim, limit, got, want)
		}
	}
}

// TestSuccessor: the successor of a prefix bounds exactly the strings
// that start with it.
func TestSuccessor(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"a", "b", true},
		{"a/", "a0", true},
		{"\uD7FF", "\uE000", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
		{"", "", false},
		{"é", "ê", true},
	} {
		got, ok := successor(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("successor(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
		if ok && !(c.in < got) {
			t.Errorf("successor(%q) = %q is not greater", c.in, got)
		}
	}
}
