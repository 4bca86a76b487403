package geodata

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// anonRecords is an Anonymous-IP database with one Tor exit network.
func anonRecords(cidr string) map[string]mmdbtype.DataType {
	return map[string]mmdbtype.DataType{cidr: mmdbtype.Map{
		"is_anonymous": mmdbtype.Bool(true), "is_tor_exit_node": mmdbtype.Bool(true),
	}}
}

// waitFor polls cond until it holds or a few seconds passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestHotReload replaces the country database many times, once by a corrupt
// file, once in place, once by a database of the wrong kind, while lookups
// run on other goroutines: no lookup may ever fail or see anything but the
// old or the new answer.
func TestHotReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "country.mmdb")
	a, b := readFixture(t, "reload-a.mmdb"), readFixture(t, "reload-b.mmdb")
	replaceFile(t, path, a)
	db, logs := openTest(t, Config{
		CountryDB:    path,
		Overrides:    fixture("overrides.txt"),
		ReloadDelay:  5 * time.Millisecond,
		PollInterval: time.Hour, // change events only
	})

	var (
		stop    atomic.Bool
		lookups atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		bad     []string
	)
	stable := map[netip.Addr]Country{
		netip.MustParseAddr("8.8.8.9"):        c("US"),
		netip.MustParseAddr("2001:4860::1"):   c("US"),
		netip.MustParseAddr("9.9.9.9"):        Unknown,
		netip.MustParseAddr("10.0.0.1"):       c("DE"), // override
		netip.MustParseAddr("::ffff:8.8.8.9"): c("US"),
	}
	changing := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				for addr, want := range stable {
					if got := db.Country(addr); got != want {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s: %v, want %v", addr, got, want))
						mu.Unlock()
					}
				}
				for _, addr := range changing {
					if got := db.Country(addr); got != c("NL") && got != c("SE") {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s: %v, want NL or SE", addr, got))
						mu.Unlock()
					}
				}
				lookups.Add(int64(len(stable) + len(changing)))
			}
		})
	}

	probe := netip.MustParseAddr("192.0.2.1")
	want := c("NL")
	expect := func(w Country) {
		t.Helper()
		want = w
		waitFor(t, "country "+w.String()+"\nlog:\n"+logs.String(), func() bool { return db.Country(probe) == w })
	}
	refused := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("refusal %d", n), func() bool { return logs.count("ERROR", "refused new file") >= n })
		time.Sleep(20 * time.Millisecond) // give a wrong swap time to show
		if got := db.Country(probe); got != want {
			t.Fatalf("after a refused file: %v, want the old %v", got, want)
		}
	}

	expect(c("NL"))
	for i := range 3 {
		replaceFile(t, path, b)
		expect(c("SE"))
		replaceFile(t, path, a)
		expect(c("NL"))
		if i == 0 {
			replaceFile(t, path, b)
			expect(c("SE"))
		}
	}
	// A truncated download, renamed over the file.
	replaceFile(t, path, b[:len(b)/2])
	refused(1)
	// A valid database again.
	replaceFile(t, path, a)
	expect(c("NL"))
	// Garbage written in place.
	if err := os.WriteFile(path, []byte("not an mmdb"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(2)
	// A database of the wrong kind.
	replaceFile(t, path, readFixture(t, "anonymous.mmdb"))
	refused(3)
	// Written in place, valid.
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	expect(c("SE"))

	stop.Store(true)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d wrong lookups of %d, e.g. %s", len(bad), lookups.Load(), bad[0])
	}
	if lookups.Load() == 0 {
		t.Fatal("no lookups ran")
	}
	if n := logs.count("INFO", "geodata: loaded", "country database"); n < 8 {
		t.Errorf("%d loads logged, want >= 8:\n%s", n, logs)
	}
	t.Logf("%d concurrent lookups, all right", lookups.Load())
}

// TestReloadEverySource changes each of the four files and checks that the
// change is picked up.
func TestReloadEverySource(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		CountryDB:      filepath.Join(dir, "country.mmdb"),
		AnonymousDB:    filepath.Join(dir, "anonymous.mmdb"),
		AnonymizerList: filepath.Join(dir, "list.txt"),
		Overrides:      filepath.Join(dir, "overrides.txt"),
		ReloadDelay:    5 * time.Millisecond,
		PollInterval:   time.Hour,
	}
	replaceFile(t, cfg.CountryDB, readFixture(t, "country-flat.mmdb"))
	replaceFile(t, cfg.AnonymousDB, buildMMDB(t, mmdbwriter.Options{}, anonRecords("203.0.113.0/24")))
	replaceFile(t, cfg.AnonymizerList, []byte("45.83.64.0/22\n"))
	replaceFile(t, cfg.Overrides, []byte("10.0.0.0/8 DE\n"))
	db, logs := openTest(t, cfg)

	steps := []struct {
		name   string
		change func()
		addr   string
		before Country
		after  Country
		done   func() bool // also wait for this, if set
	}{
		{"country", func() { replaceFile(t, cfg.CountryDB, readFixture(t, "reload-b.mmdb")) }, "192.0.2.1", c("NL"), c("SE"), nil},
		{"anonymous", func() {
			replaceFile(t, cfg.AnonymousDB, buildMMDB(t, mmdbwriter.Options{}, anonRecords("8.8.8.0/24")))
		}, "8.8.8.8", c("US"), Anonymous, nil},
		{"list", func() { replaceFile(t, cfg.AnonymizerList, []byte("2001:4860::/32\n")) }, "2001:4860::1", c("US"), Anonymous, nil},
		{"overrides", func() { replaceFile(t, cfg.Overrides, []byte("10.0.0.0/8 FR\n")) }, "10.0.0.1", c("DE"), c("FR"), nil},
		{"overrides removed", func() { os.Remove(cfg.Overrides) }, "10.0.0.1", c("FR"), c("FR"), func() bool {
			return logs.count("WARN", "file gone", "overrides") == 1
		}},
		{"overrides back", func() { replaceFile(t, cfg.Overrides, []byte("10.0.0.0/8 CH\n")) }, "10.0.0.1", c("FR"), c("CH"), nil},
	}
	for _, s := range steps {
		addr := netip.MustParseAddr(s.addr)
		if got := db.Country(addr); got != s.before {
			t.Fatalf("%s: before: Country(%s) = %v, want %v", s.name, addr, got, s.before)
		}
		s.change()
		waitFor(t, s.name, func() bool { return db.Country(addr) == s.after && (s.done == nil || s.done()) })
	}
}

// TestAllowMissing starts without the country database and its directory,
// as `platform serve` does before `make geodata`, and picks the file up when
// it appears (by polling, since the directory cannot be watched yet).
func TestAllowMissing(t *testing.T) {
	dir := t.TempDir()
	geo := filepath.Join(dir, "geo")
	path := filepath.Join(geo, "country.mmdb")
	db, logs := openTest(t, Config{
		CountryDB:    path,
		AllowMissing: true,
		ReloadDelay:  5 * time.Millisecond,
		PollInterval: 10 * time.Millisecond,
	})
	addr := netip.MustParseAddr("8.8.8.8")
	if got := db.Country(addr); got != Unknown {
		t.Fatalf("Country = %v before the file exists", got)
	}
	if logs.count("WARN", "file not found", path) != 1 {
		t.Errorf("no warning naming %s:\n%s", path, logs)
	}
	if s := db.Sources(); len(s) != 1 || s[0].Loaded || s[0].Path != path {
		t.Errorf("Sources() = %+v", s)
	}
	if err := os.Mkdir(geo, 0o755); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, readFixture(t, "country-flat.mmdb"))
	waitFor(t, "the database", func() bool { return db.Country(addr) == c("US") })
	if s := db.Sources(); !s[0].Loaded {
		t.Errorf("Sources() = %+v", s)
	}
	// The directory is watched now: a change is seen without waiting for a poll.
	replaceFile(t, path, readFixture(t, "reload-b.mmdb"))
	waitFor(t, "the new database", func() bool { return db.Country(netip.MustParseAddr("192.0.2.1")) == c("SE") })
}

func TestReloadMethod(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "overrides.txt")
	replaceFile(t, path, []byte("10.0.0.0/8 DE\n"))
	db, logs := openTest(t, Config{Overrides: path, NoReload: true})
	addr := netip.MustParseAddr("10.0.0.1")

	if err := db.Reload(); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, []byte("10.0.0.0/8 FR\n"))
	if got := db.Country(addr); got != c("DE") {
		t.Fatalf("reloaded without Reload: %v", got)
	}
	if err := db.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := db.Country(addr); got != c("FR") {
		t.Fatalf("after Reload: %v", got)
	}
	replaceFile(t, path, []byte("10.0.0.0/8 FR\n10.0.0.0/7 ZZ\n"))
	for range 2 { // the same broken file is reported each time, logged once
		err := db.Reload()
		var pe *ParseError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Line != 2 {
			t.Fatalf("Reload of a bad file: %v", err)
		}
	}
	if n := logs.count("ERROR", "refused"); n != 1 {
		t.Errorf("%d refusals logged, want 1", n)
	}
	if got := db.Country(addr); got != c("FR") {
		t.Fatalf("after a refused Reload: %v", got)
	}
	db.Close()
	if err := db.Reload(); !errors.Is(err, ErrClosed) {
		t.Errorf("Reload after Close: %v", err)
	}
	if got := db.Country(addr); got != c("FR") {
		t.Errorf("after Close: %v", got)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
