package agents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzParseSignature: any header parses or is refused, never panics, and a
// signature made by Sign always verifies.
func FuzzParseSignature(f *testing.F) {
	f.Add("t=1767225600,v1=" + strings.Repeat("ab", 32))
	f.Add("t=1,v1=zz")
	f.Add("v1=,t=")
	f.Add(",,,=")
	f.Fuzz(func(t *testing.T, h string) {
		sig, err := ParseSignature(h)
		if err == nil && (sig.Timestamp <= 0 || len(sig.V1) == 0) {
			t.Fatalf("accepted %q as %+v", h, sig)
		}
		now := time.Unix(1767225600, 0)
		if Verify("secret", h, []byte("{}"), now) == nil && !strings.Contains(h, "v1=") {
			t.Fatalf("verified %q", h)
		}
		if err := Verify("secret", Sign("secret", now, []byte(h)), []byte(h), now); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
	})
}

// FuzzParseSchedule: any text parses or is refused, and an accepted
// schedule's next runs are at least ten minutes apart.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"@hourly", "*/10 * * * *", "0,5 9 * * *", "58,3 8,9 * * *", "0 0 1 1 *", "@every 1m", "* * * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sched, _, err := ParseSchedule(text)
		if err != nil {
			return
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		prev := sched.Next(at)
		for i := 0; i < 200 && !prev.IsZero(); i++ {
			next := sched.Next(prev)
			if !next.IsZero() && next.Sub(prev) < MinScheduleGap {
				t.Fatalf("%q runs at %s and %s", text, prev, next)
			}
			prev = next
		}
	})
}

// FuzzToolArguments: a model's arguments to any tool build a request on
// the agent's project or are refused; a path never escapes its resource.
func FuzzToolArguments(f *testing.F) {
	f.Add("database_query", `{"databaseId":"db_1","sql":"SELECT 1"}`)
	f.Add("vector_query", `{"collectionId":"../../keys","text":"x"}`)
	f.Add("payments_list", `{"accountId":"pa_1","limit":5,"status":"paid"}`)
	f.Add("media_status", `{"mediaId":"m?x=1"}`)
	f.Add("send_email", `{"to":["a@example.com"],"subject":"s","text":"t"}`)
	f.Add("emails_list", `{"state":"failed","limit":5,"cursor":"c"}`)
	f.Fuzz(func(t *testing.T, name, args string) {
		tl, ok := toolByName(name)
		if !ok {
			return
		}
		rq, err := tl.build("prj_1", json.RawMessage(args))
		if err != nil {
			return
		}
		if !strings.HasPrefix(rq.Path, "/api/") || strings.Contains(rq.Path, "..") || strings.ContainsAny(rq.Path, "?#") {
			t.Fatalf("%s(%s) builds path %q", name, args, rq.Path)
		}
	})
}
