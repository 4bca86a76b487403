package audit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// tokens authenticates "Bearer <name>" as the principal of that name.
type tokens map[string]*auth.Principal

func (t tokens) Authenticate(r *http.Request) (*auth.Principal, error) {
	return t[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")], nil
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachEngine runs test once on SQLite and once on PostgreSQL.
func eachEngine(t *testing.T, test func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { test(t, e) })
	}
}

func openLog(t *testing.T, e pgtest.Engine) (*audit.Log, *clock.Fake) {
	t.Helper()
	db := e.Open(t)
	clk := clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	return audit.New(db, clk), clk
}

// rows is one row of every kind the platform writes.
var rows = []audit.Event{
	{Action: "project.create", Category: audit.CategoryProject},
	{Action: "env.set", Category: audit.CategoryEnv},
	{Action: "shield.update", Category: audit.CategorySettings},
	{Action: "database.create", Category: audit.CategoryData},
	{Action: "deploy.live", Category: audit.CategoryDeploy},
	{Action: "payments.payment", Category: audit.CategoryMoney},
	{Action: "key.create", Category: audit.CategoryKey},
	{Action: "member.invite", Category: audit.CategoryMember},
	{Action: "billing.spend_limit", Category: audit.CategoryBilling},
	{Action: "workspace.plan", Category: audit.CategoryBilling},
	{Action: "account.password", Category: audit.CategoryAccount},
	{Action: "session.create", Category: audit.CategoryAccount},
	// Written with a public category by mistake: hidden by its action.
	{Action: "member.role", Category: audit.CategorySettings},
}

var public = []string{"project.create", "env.set", "shield.update", "database.create", "deploy.live", "payments.payment"}

func TestActivityHidesPrivateRowsFromNonAdmins(t *testing.T) {
	eachEngine(t, testActivityHidesPrivateRowsFromNonAdmins)
}

func testActivityHidesPrivateRowsFromNonAdmins(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	log, _ := openLog(t, e)
	for _, e := range rows {
		e.Workspace = "ws"
		e.Summary = e.Action
		if err := log.Record(ctx, log.DB(), e); err != nil {
			t.Fatal(err)
		}
	}
	// Another workspace's row never shows.
	if err := log.Record(ctx, log.DB(), audit.Event{Workspace: "other", Action: "project.create", Category: audit.CategoryProject}); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range rows {
		all = append(all, e.Action)
	}
	p := func(role auth.Role) *auth.Principal {
		return &auth.Principal{WorkspaceID: "ws", MemberID: "mem_" + role.String(), KeyID: "key_" + role.String(), Role: role}
	}
	callers := tokens{
		"viewer": p(auth.Viewer), "developer": p(auth.Developer), "admin": p(auth.Admin), "owner": p(auth.Owner),
		"admin-readonly":    {WorkspaceID: "ws", MemberID: "mem_a", KeyID: "key_ro", Role: auth.Admin, ReadOnly: true},
		"owner-session":     {WorkspaceID: "ws", MemberID: "mem_o", Role: auth.Owner, Session: true},
		"developer-project": {WorkspaceID: "ws", MemberID: "mem_d", KeyID: "key_p", Role: auth.Developer, ProjectID: "prj_1"},
	}
	mux := http.NewServeMux()
	h := audit.Handlers{Log: log}
	api.Mount(mux, []api.Route{{Method: http.MethodGet, Path: "/api/activity", Op: auth.OpActivityRead, Handler: h.Activity}}, api.MountOptions{Authn: callers})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		caller string
		status int
		want   []string
	}{
		{"viewer", 200, public},
		{"developer", 200, public},
		{"admin", 200, all},
		{"owner", 200, all},
		{"admin-readonly", 200, all},
		{"owner-session", 200, all},
		{"developer-project", 403, nil}, // the feed is workspace-wide
	}
	for _, tt := range tests {
		t.Run(tt.caller, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/activity", nil)
			req.Header.Set("Authorization", "Bearer "+tt.caller)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status != 200 {
				return
			}
			var feed audit.Feed
			if err := json.NewDecoder(res.Body).Decode(&feed); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range feed.Activity {
				got = append(got, e.Action)
				if tt.caller == "viewer" && audit.PrivateEntry(e) {
					t.Errorf("viewer sees private row %s", e.Action)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("feed = %v, want %v", got, want)
			}
		})
	}
}

func TestLastChange(t *testing.T) { eachEngine(t, testLastChange) }

func testLastChange(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	log, clk := openLog(t, e)
	rec := func(action string, fields ...string) time.Time {
		t.Helper()
		at := clk.Now()
		if err := log.Record(ctx, log.DB(), audit.Event{Workspace: "ws", Action: action, Category: audit.CategorySettings,
			Details: map[string]any{"fields": fields}}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		return at
	}
	if _, ok, err := log.LastChange(ctx, "ws", "shield.update", "logOnly"); err != nil || ok {
		t.Fatalf("empty log: ok=%v err=%v", ok, err)
	}
	rec("shield.update", "enabled")
	first := rec("shield.update", "logOnly", "denyIps")
	rec("shield.update", "denyIps")
	rec("cdn.update", "logOnly")
	tests := []struct {
		action, field string
		want          time.Time
		ok            bool
	}{
		{"shield.update", "logOnly", first, true},
		{"shield.update", "blockedCountries", time.Time{}, false},
		{"project.update", "logOnly", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.action+"/"+tt.field, func(t *testing.T) {
			at, ok, err := log.LastChange(ctx, "ws", tt.action, tt.field)
			if err != nil || ok != tt.ok || !at.Equal(tt.want) {
				t.Fatalf("LastChange = %v, %v, %v; want %v, %v", at, ok, err, tt.want, tt.ok)
			}
		})
	}
}
