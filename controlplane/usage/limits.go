package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
)

// NearPercent is when a plan limit is near: at or past this share of it.
const NearPercent = 80

// countLimit ties a count to its plan limit.
type countLimit struct {
	count string
	label string
	limit func(plans.Limits) int
	link  Link
}

var countLimits = []countLimit{
	{"databases", "databases", func(l plans.Limits) int { return l.Databases }, Link{Method: "GET", API: "/api/usage", Dashboard: "/databases"}},
	{"vectors", "vector collections", func(l plans.Limits) int { return l.VectorCollections }, Link{Method: "GET", API: "/api/usage", Dashboard: "/vectors"}},
	{"media", "media assets", func(l plans.Limits) int { return l.MediaAssets }, Link{Method: "GET", API: "/api/usage", Dashboard: "/media"}},
	{"paymentAccount", "payment accounts", func(l plans.Limits) int { return l.PaymentAccounts }, Link{Method: "GET", API: "/api/payments", Dashboard: "/payments"}},
}

// limitItems is the service's own attention source: counts near or at the
// plan's limits (databases, vector collections, media assets, payment
// accounts, for the counters wired) and database storage near or past the
// allowance (from the latest daily measurement).
func (s *Service) limitItems(ctx context.Context, ws string) ([]Item, error) {
	plan := s.d.Plans.Plan(ctx, ws)
	lim := plans.Of(plan)
	prjs, err := s.d.Projects.List(ctx, &auth.Principal{WorkspaceID: ws})
	if err != nil {
		return nil, err
	}
	counts, err := s.counts(ctx, ws, "", prjs)
	if err != nil {
		return nil, err
	}
	var out []Item
	for _, cl := range countLimits {
		n, ok := counts[cl.count]
		limit := cl.limit(lim)
		if !ok || limit == plans.Unlimited || (limit == 0 && n == 0) {
			continue
		}
		switch {
		case n >= limit:
			out = append(out, Item{Kind: KindPlanLimit, Severity: Critical, Link: cl.link,
				Reason: fmt.Sprintf("%s: %d of %d on the %s plan; new ones are refused until you delete one or upgrade", cl.label, n, limit, plan)})
		case n*100 >= limit*NearPercent:
			out = append(out, Item{Kind: KindPlanLimit, Severity: Warning, Link: cl.link,
				Reason: fmt.Sprintf("%s: %d of %d on the %s plan", cl.label, n, limit, plan)})
		}
	}
	today := s.d.Clock.Now().UTC().Truncate(24 * time.Hour)
	m, err := s.measured(ctx, ws, KindDatabases, "", Period{From: today.AddDate(0, 0, -7), To: today.AddDate(0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if allow := lim.DatabaseStorageBytes; m.MeasuredAt != nil && allow > 0 {
		link := Link{Method: "GET", API: "/api/usage", Dashboard: "/usage"}
		used := fmt.Sprintf("database storage: %s of %s on the %s plan", gb(m.Bytes), gb(allow), plan)
		switch {
		case m.Bytes >= allow && lim.StorageOverage:
			out = append(out, Item{Kind: KindPlanLimit, Severity: Warning, Link: link, Since: m.MeasuredAt,
				Reason: used + "; storage past the allowance is charged daily from the Balance"})
		case m.Bytes >= allow:
			out = append(out, Item{Kind: KindPlanLimit, Severity: Critical, Link: link, Since: m.MeasuredAt,
				Reason: used + "; statements that add data are held (402 usage_limit) until you free space or upgrade"})
		case m.Bytes*100 >= allow*NearPercent:
			out = append(out, Item{Kind: KindPlanLimit, Severity: Warning, Link: link, Since: m.MeasuredAt, Reason: used})
		}
	}
	return out, nil
}

// gb renders bytes in GB (10^9) with two decimals, without floats.
func gb(n int64) string {
	hundredths := n / (plans.GB / 100)
	return fmt.Sprintf("%d.%02d GB", hundredths/100, hundredths%100)
}
