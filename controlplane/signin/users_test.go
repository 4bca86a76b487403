package signin

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUsersListing: users are listed oldest first in pages with a cursor,
// searched by part of their address, read one by one; no answer carries a
// password or its hash; developers' changes are audited.
func TestUsersListing(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	var ids []string
	for i, email := range []string{"ada@example.com", "bob@example.org", "carol@example.com", "dave@example.org", "erin_x@example.com"} {
		ids = append(ids, e.signUp(p.ID, email).User.ID)
		if i%2 == 0 {
			e.Clock.Advance(time.Second) // two users share a time: the id orders them
		}
	}
	var all []string
	cursor := ""
	pages := 0
	for {
		var page UserPage
		r := e.must(200, "GET", fmt.Sprintf("/api/auth-pools/%s/users?limit=2&cursor=%s", p.ID, cursor), nil)
		for _, bad := range []string{"password", "argon2", "hash"} {
			if strings.Contains(strings.ToLower(string(r.Body)), bad) {
				t.Fatalf("a listing mentions %q: %s", bad, r.Body)
			}
		}
		r.Decode(t, &page)
		pages++
		for _, u := range page.Users {
			all = append(all, u.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if pages != 3 || len(all) != 5 {
		t.Fatalf("%d pages, users %v", pages, all)
	}
	seen := map[string]bool{}
	for _, id := range all {
		if seen[id] {
			t.Fatalf("user %s listed twice: %v", id, all)
		}
		seen[id] = true
	}

	for _, tt := range []struct {
		search string
		want   []string
	}{
		{"EXAMPLE.ORG", []string{"bob@example.org", "dave@example.org"}},
		{"carol", []string{"carol@example.com"}},
		{"_", []string{"erin_x@example.com"}}, // a LIKE wildcard is a plain character
		{"%", nil},
	} {
		t.Run("search "+tt.search, func(t *testing.T) {
			var page UserPage
			e.must(200, "GET", "/api/auth-pools/"+p.ID+"/users?email="+strings.ReplaceAll(tt.search, "%", "%25"), nil).Decode(t, &page)
			var got []string
			for _, u := range page.Users {
				got = append(got, u.Email)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct{ name, path string }{
		{"bad cursor", "/users?cursor=nonsense"},
		{"limit too large", "/users?limit=201"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.call("GET", "/api/auth-pools/"+p.ID+tt.path, nil, req{key: ownerKey}); r.Status != 400 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	var one UserAnswer
	e.must(200, "GET", "/api/auth-pools/"+p.ID+"/users/"+ids[1], nil).Decode(t, &one)
	if one.User.Email != "bob@example.org" || one.User.LastSignInAt == nil {
		t.Fatalf("user %+v", one.User)
	}
	if r := e.call("GET", "/api/auth-pools/"+p.ID+"/users/usr_nope", nil, req{key: ownerKey}); r.Status != 404 {
		t.Fatalf("unknown user: %d", r.Status)
	}
	if r := e.call("PATCH", "/api/auth-pools/"+p.ID+"/users/"+ids[1], `{}`, req{key: ownerKey}); r.Status != 400 {
		t.Fatalf("an empty change: %d", r.Status)
	}
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID+"/users/"+ids[1], map[string]any{"disabled": true})
	e.must(200, "DELETE", "/api/auth-pools/"+p.ID+"/users/"+ids[2], nil)
	var actions []string
	rows, err := e.DB.QueryContext(t.Context(), `SELECT action, summary FROM audit_log WHERE target_id IN (?, ?, ?) ORDER BY seq`, p.ID, ids[1], ids[2])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, s string
		rows.Scan(&a, &s)
		if strings.Contains(s, "@") {
			t.Errorf("an audit summary names an address: %q", s)
		}
		actions = append(actions, a)
	}
	if strings.Join(actions, ",") != "auth_pool.create,auth_user.update,auth_user.delete" {
		t.Fatalf("audit %v", actions)
	}
}
