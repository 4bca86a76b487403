package deploys

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLogHubBoundsAndPaging(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newLogHub(100, time.Hour, func() time.Time { return now })
	for i := range 10 {
		src := SourceApp
		if i%2 == 1 {
			src = SourceDeploy
		}
		h.add("p", ProjectLogLine{DeploymentID: fmt.Sprintf("d%d", i%3), Source: src, Stream: StreamStdout, Line: fmt.Sprintf("line %02d", i)})
	}
	ids := func(ls []ProjectLogLine) string {
		var b []string
		for _, l := range ls {
			b = append(b, fmt.Sprint(l.ID))
		}
		return strings.Join(b, ",")
	}
	for _, c := range []struct {
		name string
		q    LogQuery
		want string
		more bool
	}{
		{"newest", LogQuery{Limit: 3}, "8,9,10", true},
		{"all", LogQuery{Limit: 100}, "1,2,3,4,5,6,7,8,9,10", false},
		{"after", LogQuery{After: 7, Limit: 2}, "8,9", true},
		{"after to the end", LogQuery{After: 8, Limit: 5}, "9,10", false},
		{"before", LogQuery{Before: 4, Limit: 2}, "2,3", true},
		{"source", LogQuery{Sources: []string{SourceDeploy}, Limit: 100}, "2,4,6,8,10", false},
		{"deployment", LogQuery{Deployment: "d1", Limit: 100}, "2,5,8", false},
		{"stream", LogQuery{Stream: StreamStderr, Limit: 100}, "", false},
		{"from the oldest", LogQuery{After: -1, Limit: 2}, "1,2", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, more := h.read("p", c.q)
			if ids(got) != c.want || more != c.more {
				t.Fatalf("read %+v = %s (more %v), want %s (more %v)", c.q, ids(got), more, c.want, c.more)
			}
		})
	}
	t.Run("bytes", func(t *testing.T) {
		for i := range 20 {
			h.add("p", ProjectLogLine{Source: SourceApp, Stream: StreamStdout, Line: fmt.Sprintf("more %02d", i)})
		}
		got, _ := h.read("p", LogQuery{Limit: 1000})
		size := 0
		for _, l := range got {
			size += len(l.Line)
		}
		if size > 100 || got[len(got)-1].Line != "more 19" {
			t.Fatalf("kept %d bytes, last %q", size, got[len(got)-1].Line)
		}
	})
	t.Run("age", func(t *testing.T) {
		now = now.Add(2 * time.Hour)
		h.add("p", ProjectLogLine{Source: SourceApp, Stream: StreamStdout, Line: "fresh"})
		got, _ := h.read("p", LogQuery{Limit: 1000})
		if len(got) != 1 || got[0].Line != "fresh" {
			t.Fatalf("after the retention: %+v", got)
		}
	})
	t.Run("long line cut", func(t *testing.T) {
		big := newLogHub(1<<20, time.Hour, func() time.Time { return now })
		big.add("q", ProjectLogLine{Line: strings.Repeat("x", 3*maxLogLine)})
		got, _ := big.read("q", LogQuery{Limit: 1})
		if len(got[0].Line) != maxLogLine {
			t.Fatalf("line of %d bytes kept", len(got[0].Line))
		}
	})
	t.Run("followers woken and ended", func(t *testing.T) {
		wake, stop := h.subscribe("r")
		defer stop()
		h.add("r", ProjectLogLine{Line: "a"})
		h.add("r", ProjectLogLine{Line: "b"})
		if _, ok := <-wake; !ok {
			t.Fatal("closed")
		}
		h.drop("r")
		if _, ok := <-wake; ok {
			t.Fatal("a dropped project's follower is not ended")
		}
	})
}

func TestParseLogQuery(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, query string
		ok          bool
		check       func(LogQuery) bool
	}{
		{"defaults", "", true, func(q LogQuery) bool { return q.Limit == DefaultLogPage }},
		{"sources", "source=build,app", true, func(q LogQuery) bool { return len(q.Sources) == 2 }},
		{"since duration", "since=15m", true, func(q LogQuery) bool { return q.Since.Equal(now.Add(-15 * time.Minute)) }},
		{"since time", "since=2026-01-01T10:00:00Z", true, func(q LogQuery) bool { return q.Since.Hour() == 10 }},
		{"after", "after=12&limit=1000", true, func(q LogQuery) bool { return q.After == 12 && q.Limit == 1000 }},
		{"bad source", "source=kernel", false, nil},
		{"bad stream", "stream=stdin", false, nil},
		{"bad since", "since=yesterday", false, nil},
		{"negative since", "since=-5m", false, nil},
		{"bad after", "after=x", false, nil},
		{"after and before", "after=1&before=5", false, nil},
		{"limit too big", "limit=1001", false, nil},
		{"limit zero", "limit=0", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _ := parseQuery(c.query)
			q, err := ParseLogQuery(v, now)
			if (err == nil) != c.ok {
				t.Fatalf("%q: err %v", c.query, err)
			}
			if c.ok && !c.check(q) {
				t.Fatalf("%q: %+v", c.query, q)
			}
		})
	}
}

func FuzzParseLogQuery(f *testing.F) {
	for _, s := range []string{"", "source=build,app&since=1h", "after=3&limit=10", "since=2026-01-01T10:00:00Z&stream=stderr"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseQuery(s)
		if err != nil {
			return
		}
		q, err := ParseLogQuery(v, now)
		if err != nil {
			return
		}
		if q.Limit < 1 || q.Limit > MaxLogPage || q.After < 0 || q.Before < 0 || (q.After > 0 && q.Before > 0) {
			t.Fatalf("%q accepted as %+v", s, q)
		}
	})
}

func parseQuery(s string) (map[string][]string, error) { return url.ParseQuery(s) }
