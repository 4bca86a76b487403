package plans

import (
	"net/http"
	"testing"
)

func TestAbove(t *testing.T) {
	databases := func(p Name) int { return Of(p).Databases }
	media := func(p Name) int { return Of(p).MediaAssets }
	unlimitedFromTeam := func(p Name) int {
		if p == Hobby || p == Pro {
			return 3
		}
		return Unlimited
	}
	for _, tc := range []struct {
		name  string
		n     int
		limit func(Name) int
		want  Name
	}{
		{"hobby holds one database, so a second needs pro", 1, databases, Pro},
		{"none yet: hobby holds one", 0, databases, Hobby},
		{"past pro's ten", 10, databases, Team},
		{"past every plan", 100, databases, ""},
		{"hobby holds no media asset", 0, media, Pro},
		{"unlimited holds everything", 1_000_000, unlimitedFromTeam, Team},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Above(tc.n, tc.limit); got != tc.want {
				t.Fatalf("Above(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestFirst(t *testing.T) {
	if got := First(func(p Name) bool { return Of(p).SitePasswords }); got != Pro {
		t.Fatalf("site passwords from %q, want pro", got)
	}
	if got := First(func(Name) bool { return false }); got != "" {
		t.Fatalf("First of nothing = %q", got)
	}
}

func TestAllows(t *testing.T) {
	for _, tc := range []struct {
		limit, n int
		want     bool
	}{{1, 1, true}, {1, 2, false}, {0, 1, false}, {0, 0, true}, {Unlimited, 1 << 30, true}} {
		if got := Allows(tc.limit, tc.n); got != tc.want {
			t.Errorf("Allows(%d, %d) = %v", tc.limit, tc.n, got)
		}
	}
}

func TestLimitError(t *testing.T) {
	databases := func(p Name) int { return Of(p).Databases }
	for _, tc := range []struct {
		name          string
		plan          Name
		current, want int
		required      any // nil: no required_plan
	}{
		{"create past hobby's one", Hobby, 1, 2, "pro"},
		{"held from a richer plan: the plan holding what is held", Hobby, 10, 10, "pro"},
		{"held past pro: team", Pro, 11, 11, "team"},
		{"past every plan: no required_plan", Enterprise, 100, 101, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := LimitError(tc.plan, databases, tc.current, tc.want, "the %s plan holds %d", tc.plan, databases(tc.plan))
			if e.Kind.Status() != http.StatusPaymentRequired || e.Code != "plan_limit" {
				t.Fatalf("status %d code %q", e.Kind.Status(), e.Code)
			}
			if e.Fields["limit"] != databases(tc.plan) || e.Fields["current"] != tc.current || e.Fields["required_plan"] != tc.required {
				t.Fatalf("fields %v", e.Fields)
			}
		})
	}
}
