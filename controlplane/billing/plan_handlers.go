package billing

import (
	"context"
	"errors"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/plans"
)

// CountFunc counts a workspace's resources that plans limit, by the usage
// report's names: databases, vectors, media, paymentAccount.
type CountFunc func(ctx context.Context, workspace string) (map[string]int, error)

// PlanHandlers serve /api/plans and /api/workspace/plan.
type PlanHandlers struct {
	L *Ledger
	// Plans stores the plan (accounts).
	Plans PlanStore
	// Counts, when set, lets a downgrade list the resources over the new
	// plan's limits.
	Counts CountFunc
}

// PlanRequest is the body of POST /api/workspace/plan.
type PlanRequest struct {
	Plan string `json:"plan"`
}

// OverLimit is a resource a workspace holds more of than its plan allows.
// What it holds keeps working; new ones are refused until it is under.
type OverLimit struct {
	Resource string `json:"resource"`
	Limit    int    `json:"limit"`
	Current  int    `json:"current"`
}

// PlanAnswer is the answer of POST /api/workspace/plan.
type PlanAnswer struct {
	Change PlanChange  `json:"change"`
	Over   []OverLimit `json:"over"`
	Note   string      `json:"note,omitempty"`
}

// PlanTable is the answer of GET /api/plans.
type PlanTable struct {
	Plans []plans.Plan `json:"plans"`
}

// limited are the counts plans limit, with the limit of each.
var limited = []struct {
	count string
	limit func(plans.Limits) int
}{
	{"databases", func(l plans.Limits) int { return l.Databases }},
	{"vectors", func(l plans.Limits) int { return l.VectorCollections }},
	{"media", func(l plans.Limits) int { return l.MediaAssets }},
	{"paymentAccount", func(l plans.Limits) int { return l.PaymentAccounts }},
}

// Over lists what counts holds beyond plan p's limits.
func Over(p plans.Name, counts map[string]int) []OverLimit {
	out := []OverLimit{}
	lim := plans.Of(p)
	for _, c := range limited {
		n, ok := counts[c.count]
		if l := c.limit(lim); ok && !plans.Allows(l, n) {
			out = append(out, OverLimit{Resource: c.count, Limit: l, Current: n})
		}
	}
	return out
}

// Table answers GET /api/plans: every plan's limits and monthly price.
func (h PlanHandlers) Table(w http.ResponseWriter, r *http.Request) error {
	return api.Reply(w, http.StatusOK, PlanTable{Plans: plans.Table()}, nil)
}

// Change answers POST /api/workspace/plan (the owner): the workspace moves
// to the plan at once, paid from the Balance with proration. A downgrade
// below what the workspace holds is made all the same and lists what is
// over: those resources keep working, new ones are refused.
func (h PlanHandlers) Change(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	var req PlanRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	to, err := plans.Parse(req.Plan)
	if err != nil {
		return api.E(api.KindInvalid, "invalid_plan", "plan must be hobby, pro, team, scale or enterprise")
	}
	if !plans.Of(to).SelfServe {
		return api.Forbidden("plan_not_self_serve", "the %s plan is set by the operator: ask them", to)
	}
	current, err := h.L.plans.PlanOf(r.Context(), p.WorkspaceID)
	if err != nil {
		return err
	}
	if current == to {
		return api.Conflict("plan_unchanged", "the workspace is already on the %s plan", to)
	}
	change, err := h.L.ChangePlan(r.Context(), h.Plans, p.WorkspaceID, to, p, "")
	var missing *MissingError
	if errors.As(err, &missing) {
		return api.E(api.KindPaymentRequired, "balance_insufficient", "%s", missing.Error()).With("missingMicros", int64(missing.Missing))
	}
	if err != nil {
		return err
	}
	out := PlanAnswer{Change: change, Over: []OverLimit{}}
	if h.Counts != nil {
		counts, err := h.Counts(r.Context(), p.WorkspaceID)
		if err != nil {
			return err
		}
		out.Over = Over(to, counts)
		if len(out.Over) > 0 {
			out.Note = "the workspace holds more than the " + string(to) + " plan allows: what it holds keeps working, new ones are refused until it is under the limits"
		}
	}
	return api.Reply(w, http.StatusOK, out, nil)
}
