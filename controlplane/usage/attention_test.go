package usage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/rules"
)

func at(h int) *time.Time { t := now0.Add(time.Duration(h) * time.Hour); return &t }

func kinds(items []usage.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("%s/%s/%s", it.Severity, it.Kind, it.ProjectID))
	}
	return out
}

func TestRank(t *testing.T) {
	items := []usage.Item{
		{Kind: usage.KindShieldLogOnly, Severity: usage.Warning, Since: at(-200)},
		{Kind: usage.KindEmailUnverified, Severity: usage.Info},
		{Kind: usage.KindDeployFailed, Severity: usage.Warning, ProjectID: "b", Since: at(-1)},
		{Kind: usage.KindDeployFailed, Severity: usage.Warning, ProjectID: "a", Since: at(-2)},
		{Kind: usage.KindDeployFailed, Severity: usage.Warning, ProjectID: "c"},
		{Kind: "something_new", Severity: usage.Critical},
		{Kind: usage.KindPlanLimit, Severity: usage.Critical},
		{Kind: usage.KindTeardownFailed, Severity: usage.Critical, ProjectID: "z"},
		{Kind: usage.KindFunctionsBehind, Severity: usage.Warning, ProjectID: "a"},
	}
	usage.Rank(items)
	want := []string{
		"critical/teardown_failed/z", "critical/plan_limit/", "critical/something_new/",
		"warning/deploy_failed/a", "warning/deploy_failed/b", "warning/deploy_failed/c",
		"warning/functions_behind/a", "warning/shield_log_only/", "info/email_unverified/",
	}
	if got := kinds(items); !slices.Equal(got, want) {
		t.Fatalf("rank =\n%v\nwant\n%v", got, want)
	}
}

func TestAttentionGathersAndRanks(t *testing.T) {
	e := newEnv(t)
	e.deps.Sources = map[string]usage.Source{
		"email": usage.SourceFunc(func(context.Context, string) ([]usage.Item, error) {
			return []usage.Item{{Kind: usage.KindEmailUnverified, Severity: usage.Warning}}, nil
		}),
		"deploys": usage.SourceFunc(func(context.Context, string) ([]usage.Item, error) {
			return []usage.Item{
				{Kind: usage.KindDeployFailed, Severity: usage.Critical, ProjectID: "prj_a"},
				{Kind: usage.KindDeployFailed, Severity: usage.Critical, ProjectID: "prj_b"},
			}, nil
		}),
		"broken": usage.SourceFunc(func(context.Context, string) ([]usage.Item, error) { return nil, errDown }),
	}
	s := e.service()
	a, err := s.Attention(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(a.Items), []string{"critical/deploy_failed/prj_a", "critical/deploy_failed/prj_b", "warning/email_unverified/"}; !slices.Equal(got, want) {
		t.Fatalf("items = %v, want %v", got, want)
	}
	if !slices.Equal(a.Unavailable, []string{"broken"}) {
		t.Fatalf("unavailable = %v", a.Unavailable)
	}
	projectKey := &auth.Principal{WorkspaceID: "ws", KeyID: "k", Role: auth.Developer, ProjectID: "prj_b"}
	a, _ = s.Attention(context.Background(), projectKey)
	if got, want := kinds(a.Items), []string{"critical/deploy_failed/prj_b", "warning/email_unverified/"}; !slices.Equal(got, want) {
		t.Fatalf("project key items = %v, want %v", got, want)
	}
}

func TestAttentionPlanLimits(t *testing.T) {
	tests := []struct {
		name    string
		plan    plans.Name
		dbs     int // databases in prj_a
		vectors int
		bytes   int64 // measured database bytes (0: not measured)
		want    []string
	}{
		{"nothing near", plans.Pro, 2, 1, 0, nil},
		{"hobby database at cap", plans.Hobby, 1, 0, 0, []string{"critical/plan_limit/databases: 1 of 1"}},
		{"pro databases near", plans.Pro, 8, 0, 0, []string{"warning/plan_limit/databases: 8 of 10"}},
		{"pro databases over", plans.Pro, 11, 0, 0, []string{"critical/plan_limit/databases: 11 of 10"}},
		{"vectors at cap", plans.Pro, 0, 10, 0, []string{"critical/plan_limit/vector collections: 10 of 10"}},
		{"hobby storage near", plans.Hobby, 0, 0, 400_000_000, []string{"warning/plan_limit/database storage: 0.40 GB of 0.50 GB"}},
		{"hobby storage full", plans.Hobby, 0, 0, 500_000_000, []string{"critical/plan_limit/database storage: 0.50 GB of 0.50 GB"}},
		{"pro storage past allowance is charged", plans.Pro, 0, 0, 6 * plans.GB, []string{"warning/plan_limit/database storage: 6.00 GB of 5.00 GB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.plans.plan = tt.plan
			e.deps.Counters = []usage.Counter{
				fakeCounter{"databases", map[string]int{"prj_a": tt.dbs}},
				fakeCounter{"vectors", map[string]int{"prj_b": tt.vectors}},
			}
			if tt.bytes > 0 {
				e.deps.Workspaces = func(context.Context) ([]string, error) { return []string{"ws"}, nil }
				e.deps.Sizers = map[string]usage.Sizer{usage.KindDatabases: usage.SizerFunc(func(context.Context, string) ([]usage.Size, error) {
					return []usage.Size{{Project: "prj_a", Resource: "db", Bytes: tt.bytes}}, nil
				})}
			}
			s := e.service()
			if _, err := s.Measure(context.Background()); err != nil {
				t.Fatal(err)
			}
			a, err := s.Attention(context.Background(), owner)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range a.Items {
				got = append(got, string(it.Severity)+"/"+it.Kind+"/"+it.Reason)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("items = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Fatalf("item %q, want prefix %q", got[i], tt.want[i])
				}
			}
		})
	}
}

type fakeDeployments struct {
	list   map[string][]deploys.Deployment
	behind map[string][]string
}

func (f fakeDeployments) List(_ context.Context, _, projectID string) (deploys.ProjectDeployments, error) {
	return deploys.ProjectDeployments{Deployments: f.list[projectID]}, nil
}

func (f fakeDeployments) FunctionsBehind(_ context.Context, projectID string) ([]string, error) {
	return f.behind[projectID], nil
}

type fakeVerifier struct{ ok bool }

func (f fakeVerifier) OwnerEmailVerified(context.Context, string) (bool, error) { return f.ok, nil }

type fakeShield struct{ st rules.Settings }

func (f fakeShield) Current(context.Context, string) (rules.Settings, error) { return f.st, nil }

type fakeChanges struct {
	at time.Time
	ok bool
}

func (f fakeChanges) LastChange(_ context.Context, _, action, field string) (time.Time, bool, error) {
	if action != "shield.update" || field != "logOnly" {
		return time.Time{}, false, nil
	}
	return f.at, f.ok, nil
}

type fakeBlockers map[string][]projects.Blocker

func (f fakeBlockers) Blockers(_ context.Context, id string) ([]projects.Blocker, error) {
	return f[id], nil
}

type fakeWebhooks []usage.FailingWebhook

func (f fakeWebhooks) FailingWebhooks(context.Context, string) ([]usage.FailingWebhook, error) {
	return f, nil
}

func TestSources(t *testing.T) {
	e := newEnv(t)
	finished := now0.Add(-time.Hour)
	e.prjs.list = append(e.prjs.list, projects.Project{ID: "prj_t", Name: "T", WorkspaceID: "ws", Status: projects.StatusTeardownFailed,
		TeardownError: "databases: disk full", UpdatedAt: now0.Add(-2 * time.Hour)})
	e.prjs.list = append(e.prjs.list, projects.Project{ID: "prj_c", Name: "C", WorkspaceID: "ws", Status: projects.StatusActive})
	deps := fakeDeployments{
		list: map[string][]deploys.Deployment{
			"prj_a": {{ID: "dep_3", State: deploys.StateFailed, Error: "build: no index.html", FinishedAt: &finished}, {ID: "dep_2", State: deploys.StateLive}},
			"prj_b": {{ID: "dep_5", State: deploys.StateFailed}, {ID: "dep_4", State: deploys.StateInactive}},
			"prj_c": {{ID: "dep_7", State: deploys.StateDeploying, CreatedAt: now0.Add(-20 * time.Minute)}},
			"prj_t": {{ID: "dep_9", State: deploys.StateFailed}},
		},
		behind: map[string][]string{"prj_a": {"a"}},
	}
	credits := func(sum billing.Summary) usage.Source {
		return usage.CreditSource{Credits: &fakeCredits{sum: sum}, Meter: e.meter, Clock: e.clk}
	}
	tests := []struct {
		name string
		src  usage.Source
		want []string // severity/kind/project: reason prefix
	}{
		{"teardown", usage.ProjectsSource{Projects: e.prjs}, []string{"critical/teardown_failed/prj_t: project T was only partly deleted"}},
		{"deploys", usage.DeploysSource{Projects: e.prjs, Deployments: deps, Clock: e.clk}, []string{
			"warning/deploy_failed/prj_a: the latest deploy of A failed; an older deployment is still live: build: no index.html",
			"warning/functions_behind/prj_a: function a runs older environment variables",
			"critical/deploy_failed/prj_b: the latest deploy of B failed and nothing is live",
			"warning/deploy_stuck/prj_c: a deploy of C has been running for 20 minutes",
		}},
		{"deploy not stuck yet", usage.DeploysSource{Projects: e.prjs, Deployments: fakeDeployments{list: map[string][]deploys.Deployment{
			"prj_c": {{ID: "dep_7", State: deploys.StateDeploying, CreatedAt: now0.Add(-14 * time.Minute)}}}}, Clock: e.clk}, nil},
		{"email unverified", usage.EmailSource{Verifier: fakeVerifier{false}}, []string{"warning/email_unverified/: the owner's e-mail is not verified"}},
		{"email verified", usage.EmailSource{Verifier: fakeVerifier{true}}, nil},
		{"credit plenty", credits(billing.Summary{Included: 10_000_000, IncludedLeft: 5_000_000}), nil},
		{"credit low", credits(billing.Summary{Included: 10_000_000, IncludedLeft: 900_000, Available: 500_000}),
			[]string{"warning/ai_credit_low/: AI credit is running low: $0.90 of $10.00 included credit left this month, Balance $0.50"}},
		{"credit low but balance loaded", credits(billing.Summary{Included: 10_000_000, IncludedLeft: 900_000, Available: 5_000_000}), nil},
		{"credit used up", credits(billing.Summary{Included: 10_000_000}), []string{"critical/ai_credit_low/: AI credit is used up"}},
		{"hobby without AI use", credits(billing.Summary{}), nil},
		{"hobby Balance low without AI use", credits(billing.Summary{Balance: 500_000, Available: 500_000}), nil},
		{"hobby Balance loaded", credits(billing.Summary{Balance: 5_000_000, Available: 5_000_000}), nil},
		{"owed with credit left", credits(billing.Summary{Included: 10_000_000, IncludedLeft: 5_000_000, Owed: 2_000_000}),
			[]string{"warning/ai_credit_low/: $2.00 is owed for requests that used more than their estimate"}},
		{"hobby owing, nothing left", credits(billing.Summary{Balance: 1_000_000, Owed: 3_000_000}),
			[]string{"critical/ai_credit_low/: AI credit is used up: AI requests and agent runs answer 402 ai_credits_exhausted until the Balance is loaded or the month turns; $3.00 is owed"}},
		{"hobby Balance low and owing", credits(billing.Summary{Balance: 1_500_000, Available: 500_000, Owed: 1_000_000}),
			[]string{"warning/ai_credit_low/: the Balance is running low: $0.50 left, and this plan has no included AI credit"}},
		{"shield log-only 8 days", usage.ShieldSource{Shield: fakeShield{rules.Settings{Enabled: true, LogOnly: true}}, Changes: fakeChanges{now0.AddDate(0, 0, -8), true}, Clock: e.clk},
			[]string{"warning/shield_log_only/: Shield has been in log-only mode for 8 days"}},
		{"shield log-only 6 days", usage.ShieldSource{Shield: fakeShield{rules.Settings{Enabled: true, LogOnly: true}}, Changes: fakeChanges{now0.AddDate(0, 0, -6), true}, Clock: e.clk}, nil},
		{"shield off", usage.ShieldSource{Shield: fakeShield{rules.Settings{LogOnly: true}}, Changes: fakeChanges{now0.AddDate(0, 0, -8), true}, Clock: e.clk}, nil},
		{"refunds owed", usage.RefundsSource{Projects: e.prjs, Payments: fakeBlockers{
			"prj_a": {{Kind: "unwithdrawn_earnings", Message: "$5.00 of earnings are not withdrawn yet"}},
			"prj_b": {{Kind: "refunds_owed", Message: "$3.00 is owed for refunds", Action: "wait for new sales to cover the refunds"}},
		}}, []string{"warning/refunds_owed/prj_b: project B: $3.00 is owed for refunds"}},
		{"webhooks failing", usage.WebhooksSource{Webhooks: fakeWebhooks{{ProjectID: "prj_a", AccountID: "pay_1", Failed: 3, LastError: "503", Since: now0}}},
			[]string{"warning/webhooks_failing/prj_a: 3 webhook deliveries failed: 503"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := tt.src.Attention(context.Background(), "ws")
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(tt.want) {
				t.Fatalf("items = %+v, want %v", items, tt.want)
			}
			for i, it := range items {
				got := fmt.Sprintf("%s/%s/%s: %s", it.Severity, it.Kind, it.ProjectID, it.Reason)
				if !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("item %d = %q, want prefix %q", i, got, tt.want[i])
				}
				if it.Link.API == "" || it.Link.Dashboard == "" || it.Link.Method == "" {
					t.Errorf("item %d has no link: %+v", i, it.Link)
				}
			}
		})
	}
	t.Run("after AI use on a plan without credit", func(t *testing.T) {
		e.record("", metering.AIRequests, 1, now0.AddDate(0, 0, -3))
		for _, c := range []struct {
			name string
			sum  billing.Summary
			sev  usage.Severity
			want string
		}{
			{"Balance used up", billing.Summary{}, usage.Critical, "AI credit is used up"},
			{"Balance running low", billing.Summary{Balance: 900_000, Available: 900_000}, usage.Warning,
				"the Balance is running low: $0.90 left, and this plan has no included AI credit, so AI requests and agent runs are paid from the Balance; load it before it runs out"},
			{"Balance at the threshold", billing.Summary{Balance: usage.LowBalance, Available: usage.LowBalance}, "", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				items, err := credits(c.sum).Attention(context.Background(), "ws")
				if err != nil {
					t.Fatal(err)
				}
				if c.sev == "" {
					if len(items) != 0 {
						t.Fatalf("items = %+v", items)
					}
					return
				}
				if len(items) != 1 || items[0].Severity != c.sev || items[0].Kind != usage.KindAICredit || !strings.HasPrefix(items[0].Reason, c.want) {
					t.Fatalf("items = %+v, want %s %q", items, c.sev, c.want)
				}
			})
		}
	})
}
