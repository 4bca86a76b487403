package databases

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Every customer connection carries the specification's limits and the
// settings that make commits durable.
func TestConnectionSettings(t *testing.T) {
	h, err := openHandle("db_x", filepath.Join(t.TempDir(), "x.db"), true, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	ctx := context.Background()
	check := func(name string, raw func(func(any) error) error, wantQueryOnly int64) {
		err := raw(func(dc any) error {
			cn := dc.(*conn)
			for id, want := range map[int]int{
				sqlite3.SQLITE_LIMIT_LENGTH: MaxValueBytes, sqlite3.SQLITE_LIMIT_SQL_LENGTH: MaxSQLBytes,
				sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: MaxParams, sqlite3.SQLITE_LIMIT_COLUMN: MaxColumns, sqlite3.SQLITE_LIMIT_ATTACHED: 0,
			} {
				if got := cn.GetLimit(id); got != want {
					t.Errorf("%s: limit %d = %d, want %d", name, id, got, want)
				}
			}
			for pragma, want := range map[string]int64{"synchronous": 2, "foreign_keys": 1, "max_page_count": 1000, "query_only": wantQueryOnly, "busy_timeout": 5000} {
				v := make([]int64, 1)
				cn.RegisterAuthorizer(nil) // read settings customer SQL may not
				if err := cn.scanInts(ctx, "PRAGMA "+pragma, v); err != nil {
					t.Fatal(err)
				}
				cn.RegisterAuthorizer(cn.authorize)
				if v[0] != want {
					t.Errorf("%s: PRAGMA %s = %d, want %d", name, pragma, v[0], want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	w, err := h.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	check("writer", w.Raw, 0)
	r, err := h.readers.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check("reader", r.Raw, 1)
}

func TestLimiter(t *testing.T) {
	l := newLimiter()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if ok, _ := l.allow("w", t0.Add(time.Duration(i)*time.Second), 3, time.Minute); !ok {
			t.Fatalf("request %d refused", i)
		}
	}
	if ok, wait := l.allow("w", t0.Add(10*time.Second), 3, time.Minute); ok || wait != 50*time.Second {
		t.Fatalf("4th: %v %s, want refused for 50s", ok, wait)
	}
	if ok, _ := l.allow("other", t0.Add(10*time.Second), 3, time.Minute); !ok {
		t.Fatal("another workspace is limited separately")
	}
	if ok, _ := l.allow("w", t0.Add(time.Minute), 3, time.Minute); !ok {
		t.Fatal("the oldest left the window")
	}
	if ok, wait := l.allow("w", t0.Add(time.Minute), 3, time.Minute); ok || wait != time.Second {
		t.Fatalf("then: %v %s, want refused for 1s", ok, wait)
	}
	l.allow("w", t0.Add(time.Hour), 3, time.Minute) // sweeps idle workspaces
	if _, ok := l.m["other"]; ok {
		t.Fatal("idle workspace kept")
	}
}

func TestDecodeParam(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want driver.Value
		bad  bool
	}{
		{"null", nil, false}, {"true", int64(1), false}, {"false", int64(0), false},
		{"42", int64(42), false}, {"-9223372036854775808", int64(math.MinInt64), false},
		{"9223372036854775808", nil, true}, {"1.5", 1.5, false}, {"1e3", 1000.0, false}, {"1e999", nil, true},
		{`"a\nb"`, "a\nb", false}, {`{"$blob":"AAH/"}`, []byte{0, 1, 255}, false},
		{`{"$blob":"AAH/","x":"y"}`, nil, true}, {`{"$blob":1}`, nil, true}, {`[1]`, nil, true},
	} {
		got, err := decodeParam(json.RawMessage(tc.raw))
		if tc.bad != (err != nil) {
			t.Errorf("%s: error %v", tc.raw, err)
			continue
		}
		if b, ok := tc.want.([]byte); ok {
			if string(got.([]byte)) != string(b) {
				t.Errorf("%s = %v", tc.raw, got)
			}
		} else if got != tc.want {
			t.Errorf("%s = %#v, want %#v", tc.raw, got, tc.want)
		}
	}
}

func TestAppendValue(t *testing.T) {
	for _, tc := range []struct {
		v    driver.Value
		want string
	}{
		{nil, "null"}, {int64(-7), "-7"}, {0.1, "0.1"}, {1e21, "1e+21"}, {1e-7, "1e-7"}, {2.0, "2"}, {math.Inf(1), "null"},
		{"<a & \"b\"\\\x01>", `"<a & \"b\"\\\u0001>"`}, {"\xff", `"\ufffd"`}, {"\u2028", `"\u2028"`},
		{[]byte{}, `{"$blob":""}`}, {[]byte("hi"), `{"$blob":"aGk="}`},
	} {
		if got := string(appendValue(nil, tc.v)); got != tc.want {
			t.Errorf("%#v -> %s, want %s", tc.v, got, tc.want)
		}
		var any any
		if err := json.Unmarshal(appendValue(nil, tc.v), &any); err != nil {
			t.Errorf("%#v is not JSON: %v", tc.v, err)
		}
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 999: "999 bytes", 65536: "65.5 KB", 114688: "115 KB", 500_000_000: "500 MB", 10_000_000_000: "10 GB", 999_999: "1 MB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// Beyond the cap, the least recently used idle database is closed; one in
// use stays open.
func TestHandlesEvictIdle(t *testing.T) {
	dir := t.TempDir()
	hs := newHandles(2)
	defer hs.closeAll()
	open := func(id string) *handle {
		h, err := hs.get(id, func() (*handle, error) { return openHandle(id, filepath.Join(dir, id+".db"), true, 1000) })
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := open("a")
	if err := a.pin(); err != nil { // a is busy
		t.Fatal(err)
	}
	defer a.leave()
	b := open("b")
	b.pin()
	b.leave() // b was used after a, but is idle
	open("c")
	if _, ok := hs.m["b"]; ok {
		t.Fatal("idle b kept beyond the cap")
	}
	if _, ok := hs.m["a"]; !ok {
		t.Fatal("busy a closed")
	}
	if err := b.pin(); err != errClosed {
		t.Fatalf("evicted handle still usable: %v", err)
	}
	// With every other one busy, a new database opens beyond the cap
	// rather than closing itself.
	c := open("c")
	c.pin()
	defer c.leave()
	open("d")
	if len(hs.m) != 3 {
		t.Fatalf("open: %d", len(hs.m))
	}
}
