package billing

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// keys authenticates "Bearer <name>" as the principal of that name.
type keys map[string]*auth.Principal

func (k keys) Authenticate(r *http.Request) (*auth.Principal, error) {
	return k[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")], nil
}

func serve(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	h := Handlers{L: f.l}
	mux := http.NewServeMux()
	// The routes as the lead mounts them (ops of the permission table).
	api.Mount(mux, []api.Route{
		{Method: http.MethodGet, Path: "/api/billing", Op: auth.OpWorkspaceRead, Handler: h.Get},
		{Method: http.MethodPut, Path: "/api/billing/spend-limit", Op: auth.OpWorkspaceRead, Handler: h.PutSpendLimit},
	}, api.MountOptions{Authn: keys{
		"owner":    {WorkspaceID: "ws_pro", MemberID: "mem_o", Role: auth.Owner, KeyID: "key_o", KeyPrefix: "svc_o"},
		"admin":    {WorkspaceID: "ws_pro", MemberID: "mem_a", Role: auth.Admin, Session: true},
		"readonly": {WorkspaceID: "ws_pro", MemberID: "mem_a", Role: auth.Admin, ReadOnly: true},
		"dev":      {WorkspaceID: "ws_pro", MemberID: "mem_d", Role: auth.Developer},
	}})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return resp.StatusCode, m
}

func TestHandlers(t *testing.T) { eachEngine(t, testHandlers) }

func testHandlers(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	srv := serve(t, f)
	f.load(t, "ws_pro", 20*usd)
	f.settle(t, f.reserve(t, "ws_pro", 10*usd).ID, 10*usd)
	f.settle(t, f.reserve(t, "ws_pro", 3*usd).ID, 2*usd)
	f.reserve(t, "ws_pro", usd)

	status, got := call(t, srv, "owner", "GET", "/api/billing", "")
	want := map[string]any{
		"month": "2026-11", "periodStart": "2026-11-01T00:00:00Z", "periodEnd": "2026-12-01T00:00:00Z", "plan": "pro", "currency": "usd",
		"balanceMicros": 18e6, "reservedMicros": 1e6, "owedMicros": 0.0, "availableMicros": 17e6,
		"includedCreditMicros": 10e6, "includedCreditUsedMicros": 10e6, "includedCreditReservedMicros": 0.0, "includedCreditLeftMicros": 0.0,
		"usageCreditMicros": 0.0, "usageCreditUsedMicros": 0.0, "usageCreditLeftMicros": 0.0,
		"monthSpendMicros": 2e6, "spendLimitMicros": nil, "spendLimitLeftMicros": nil,
	}
	if status != 200 || !equalJSON(got["billing"], want) {
		t.Fatalf("%d %v\nwant %v", status, got, want)
	}

	status, got = call(t, srv, "admin", "PUT", "/api/billing/spend-limit", `{"spendLimitMicros": 5000000}`)
	b, _ := got["billing"].(map[string]any)
	if status != 200 || b["spendLimitMicros"] != 5e6 || b["spendLimitLeftMicros"] != 2e6 {
		t.Fatalf("%d %v", status, got)
	}
	rows, _, _ := f.audit.List(context.Background(), audit.Query{Workspace: "ws_pro", Action: "billing.spend_limit", Limit: 5})
	if len(rows) != 1 || rows[0].Actor.MemberID != "mem_a" || rows[0].Actor.Kind != "session" {
		t.Fatalf("audit %+v", rows)
	}

	refusals := []struct {
		name, key, method, body string
		status                  int
		code                    string
	}{
		{"developer cannot read", "dev", "GET", "", 403, "insufficient_role"},
		{"developer cannot set", "dev", "PUT", `{"spendLimitMicros": 1}`, 403, "insufficient_role"},
		{"read-only key cannot set", "readonly", "PUT", `{"spendLimitMicros": 1}`, 403, "read_only_key"},
		{"no credentials", "nobody", "GET", "", 401, "unauthenticated"},
		{"missing field", "owner", "PUT", `{}`, 400, "invalid_setting"},
		{"fraction", "owner", "PUT", `{"spendLimitMicros": 1.5}`, 400, "invalid_setting"},
		{"exponent", "owner", "PUT", `{"spendLimitMicros": 1e6}`, 400, "invalid_setting"},
		{"negative", "owner", "PUT", `{"spendLimitMicros": -1}`, 400, "invalid_setting"},
		{"string", "owner", "PUT", `{"spendLimitMicros": "5"}`, 400, "invalid_setting"},
		{"too large", "owner", "PUT", `{"spendLimitMicros": 100000000000001}`, 400, "invalid_setting"},
		{"beyond int64", "owner", "PUT", `{"spendLimitMicros": 99999999999999999999}`, 400, "invalid_setting"},
		{"unknown field", "owner", "PUT", `{"limit": 5}`, 400, "unknown_field"},
		{"empty body", "owner", "PUT", ``, 400, "invalid_request"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			path := "/api/billing"
			if c.method == "PUT" {
				path += "/spend-limit"
			}
			status, got := call(t, srv, c.key, c.method, path, c.body)
			e, _ := got["error"].(map[string]any)
			if status != c.status || e["code"] != c.code {
				t.Fatalf("%d %v; want %d %s", status, got, c.status, c.code)
			}
		})
	}
	if s := f.summary(t, "ws_pro"); s.SpendLimit == nil || *s.SpendLimit != 5*usd {
		t.Fatalf("a refusal changed the limit: %+v", s)
	}
	status, got = call(t, srv, "owner", "PUT", "/api/billing/spend-limit", `{"spendLimitMicros": null}`)
	if b, _ := got["billing"].(map[string]any); status != 200 || b["spendLimitMicros"] != nil {
		t.Fatalf("%d %v", status, got)
	}

	// A 402 from the ledger reaches a client with the specification's code.
	f.settle(t, f.reserve(t, "ws_pro", 10*usd).ID, 10*usd)
	_, err := f.l.Reserve(context.Background(), ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAI, Amount: 9 * usd})
	if e := api.AsError(err); e.Kind.Status() != 402 || e.Code != "ai_credits_insufficient" || !strings.Contains(e.Message, "left") {
		t.Fatalf("%+v", e)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func FuzzSpendLimitRequest(f *testing.F) {
	for _, s := range []string{`{"spendLimitMicros":5}`, `{"spendLimitMicros":null}`, `{}`, `{"spendLimitMicros":1e3}`, `{"spendLimitMicros":-0}`, `{"spendLimitMicros":00}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req SpendLimitRequest
		if err := api.DecodeBytes([]byte(body), &req, false); err != nil {
			return
		}
		limit, err := req.Limit()
		if err != nil {
			if e := api.AsError(err); e.Kind != api.KindInvalid {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		if limit != nil && (*limit < 0 || *limit > MaxSpendLimit) {
			t.Fatalf("%q accepted as %d", body, *limit)
		}
	})
}

func FuzzParseUSD(f *testing.F) {
	for _, s := range []string{"12", "12.50", "0.000001", "999999999.999999", "-1", "1e3", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseUSD(s)
		if err != nil {
			return
		}
		if m < 0 || m >= 1_000_000_000*Dollar {
			t.Fatalf("%q parsed as %d", s, m)
		}
		back, err := ParseUSD(m.USD())
		if err != nil || back != m {
			t.Fatalf("%q -> %d -> %q -> %d %v", s, m, m.USD(), back, err)
		}
	})
}
