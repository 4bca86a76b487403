package databases

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
)

// Every customer connection carries the specification's limits and the
// settings that make commits durable.
func TestConnectionSettings(t *testing.T) {
	h, err := openHandle("db_x", filepath.Join(t.TempDir(), "x.db"), true, 1000, clock.System{})
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
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func(id string) *handle {
		clk.Advance(time.Second)
		h, err := hs.get(id, func() (*handle, error) { return openHandle(id, filepath.Join(dir, id+".db"), true, 1000, clk) })
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
	// Of two idle handles the one used longer ago on the injected clock
	// closes first, whatever the wall clock says.
	hs2 := newHandles(2)
	defer hs2.closeAll()
	get := func(id string) *handle {
		h, err := hs2.get(id, func() (*handle, error) { return openHandle(id, filepath.Join(dir, id+".db"), true, 1000, clk) })
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	x := get("x")
	clk.Advance(time.Second)
	get("y")
	clk.Advance(time.Second)
	x.pin() // x is now the more recently used
	x.leave()
	get("z")
	if _, ok := hs2.m["y"]; ok {
		t.Fatal("y, used longest ago, still open")
	}
	if _, ok := hs2.m["x"]; !ok {
		t.Fatal("x, used recently, closed")
	}
}

// The gate holds by effect: once the workspace is at its allowance, a
// request the hold lets run by its verbs (DELETE, DROP, ...) commits only if
// it grew the database by at most effectSlack; one it stops by its verbs
// never commits; below the line both commit, and a failed commit puts the
// size back.
func TestGateByEffect(t *testing.T) {
	for _, tc := range []struct {
		name          string
		other, before int64
		after         int64
		adds          bool
		held          bool
	}{
		{"under the line, adds", 100, 200, 5000, true, false},
		{"crossing the line, adds", 100, 800, 5000, true, false},
		{"at the line, adds", 200, 800, 800, true, true},
		{"over, shrinks", 900, 800, 100, false, false},
		{"over, grows within slack", 900, 800, 800 + effectSlack, false, false},
		{"over, grows past slack", 900, 800, 801 + effectSlack, false, true},
		{"over, adds but shrinks", 900, 800, 100, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Service{storage: newStorage()}
			s.storage.set("db_a", tc.before)
			s.storage.set("db_b", tc.other)
			g := &gate{s: s, rec: record{ID: "db_a", Workspace: "ws"}, ids: []string{"db_a", "db_b"}, allowance: 1000,
				plan: plans.Of(plans.Hobby), adds: tc.adds}
			done, err := g.admit(context.Background(), tc.after)
			if tc.held {
				if api.AsError(err) == nil || api.AsError(err).Code != "usage_limit" {
					t.Fatalf("admitted: %v", err)
				}
				if n, _ := s.storage.size("db_a"); n != tc.before {
					t.Fatalf("size %d after a refusal", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := s.storage.size("db_a"); n != tc.after {
				t.Fatalf("size %d, want the reserved %d", n, tc.after)
			}
			done(false)
			if n, _ := s.storage.size("db_a"); n != tc.before {
				t.Fatalf("size %d after a failed commit, want %d", n, tc.before)
			}
		})
	}
}

// Storage past the allowance costs 1.00 dollar per GB-month, charged by
// the day: the month's price over the month's days, rounded up to the
// micro-dollar.
func TestDailyStorageCharge(t *testing.T) {
	for _, tc := range []struct {
		over int64
		day  string
		want int64
	}{
		{0, "2026-11-02", 0},
		{-5, "2026-11-02", 0},
		{1, "2026-11-02", 1},
		{plans.GB, "2026-11-02", 33_334}, // 30 days
		{plans.GB, "2026-12-31", 32_259}, // 31 days
		{plans.GB, "2026-02-10", 35_715}, // 28 days
		{30 * plans.GB, "2026-11-02", 1_000_000},
		{100 * 10 * plans.GB, "2026-11-02", 33_333_334},
	} {
		t.Run(fmt.Sprint(tc.over, tc.day), func(t *testing.T) {
			day, _ := time.Parse(time.DateOnly, tc.day)
			if got := DailyStorageCharge(tc.over, day); got != tc.want {
				t.Fatalf("%d micro-dollars, want %d", got, tc.want)
			}
		})
	}
}
