package plans

import "github.com/svcplatform/platform/controlplane/api"

// First names the smallest plan for which ok holds, or "" when none does.
func First(ok func(Name) bool) Name {
	for _, p := range All() {
		if ok(p) {
			return p
		}
	}
	return ""
}

// Above names the smallest plan whose limit holds more than n (Unlimited
// holds everything), or "" when none does. limit reads one limit of a
// plan, from this table or an area's own (sign-in pools).
func Above(n int, limit func(Name) int) Name {
	return First(func(p Name) bool { l := limit(p); return l == Unlimited || l > n })
}

// Allows tells whether a limit (Unlimited included) allows holding n.
func Allows(limit, n int) bool { return limit == Unlimited || n <= limit }

// LimitError is the refusal of a workspace on plan that holds current of
// what limit counts and would need want of them (current+1 to create one):
// 402 with code plan_limit, the message (which says what to do), and the
// fields limit, current and, when a larger plan holds want, required_plan.
func LimitError(plan Name, limit func(Name) int, current, want int, format string, args ...any) *api.Error {
	e := api.E(api.KindPaymentRequired, "plan_limit", format, args...).With("limit", limit(plan)).With("current", current)
	if next := Above(want-1, limit); next != "" {
		e = e.With("required_plan", string(next))
	}
	return e
}

// Lookup returns plan p's value of an area's own per-plan setting: the
// operator's (set) when it names p, else the area's default for p, else
// the default for Hobby (a plan the area's table does not know gets the
// smallest).
func Lookup[T any](set, defaults map[Name]T, p Name) T {
	if v, ok := set[p]; ok {
		return v
	}
	if v, ok := defaults[p]; ok {
		return v
	}
	return defaults[Hobby]
}
