package shield

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// Blocks is what the rules caught over the last days (spec: "what the rules
// caught"), from what the edges report every few seconds.
type Blocks struct {
	// Days is 7 or 30; the window is the last Days UTC days, today included.
	Days int    `json:"days"`
	From string `json:"from"`
	To   string `json:"to"`
	// Refused counts requests refused; WouldRefuse counts what log-only
	// mode let through.
	Refused     int64 `json:"refused"`
	WouldRefuse int64 `json:"wouldRefuse"`
	// Items are per site or function and rule, most first.
	Items []BlockItem `json:"items"`
	// Daily are the totals per UTC day, oldest first, every day present.
	Daily []BlockDay `json:"daily"`
	Note  string     `json:"note"`
}

// BlockItem is one site's or function's counts for one rule.
type BlockItem struct {
	ProjectID string `json:"projectId"`
	// Site is the project's slug.
	Site string `json:"site"`
	// Kind is static, app or function (what the project served when counted).
	Kind string `json:"kind"`
	// Rule is denyList, country or aiCrawler.
	Rule        string `json:"rule"`
	Refused     int64  `json:"refused"`
	WouldRefuse int64  `json:"wouldRefuse"`
}

// BlockDay is one UTC day's totals.
type BlockDay struct {
	Day         string `json:"day"`
	Refused     int64  `json:"refused"`
	WouldRefuse int64  `json:"wouldRefuse"`
}

// ParseDays reads the days query parameter: 7 (the default) or 30.
func ParseDays(s string) (int, error) {
	switch s {
	case "", "7":
		return 7, nil
	case "30":
		return 30, nil
	}
	return 0, api.Invalid("days must be 7 or 30")
}

// Blocks sums what the edges counted for the workspace over the last days.
func (s *Service) Blocks(ctx context.Context, workspace string, days int) (Blocks, error) {
	today := s.clock.Now().UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -(days - 1))
	out := Blocks{Days: days, From: from.Format(time.DateOnly), To: today.Format(time.DateOnly), Items: []BlockItem{},
		Note: "counts are close, not exact: edges report them every few seconds"}
	rows, dayRows, err := s.counts.Counts(ctx, workspace, out.From)
	if err != nil {
		return Blocks{}, err
	}
	slugs, err := s.projects.Slugs(ctx, workspace)
	if err != nil {
		return Blocks{}, err
	}
	idx := map[[2]string]int{}
	for _, r := range rows {
		slug, ok := slugs[r.ProjectID]
		if !ok {
			continue
		}
		k := [2]string{r.ProjectID, r.Rule}
		i, seen := idx[k]
		if !seen {
			i = len(out.Items)
			idx[k] = i
			out.Items = append(out.Items, BlockItem{ProjectID: r.ProjectID, Site: slug, Kind: r.Kind, Rule: r.Rule})
		}
		if r.Verdict == "wouldRefuse" {
			out.Items[i].WouldRefuse += r.N
			out.WouldRefuse += r.N
		} else {
			out.Items[i].Refused += r.N
			out.Refused += r.N
		}
	}
	slices.SortFunc(out.Items, func(a, b BlockItem) int {
		return cmp.Or(cmp.Compare(b.Refused+b.WouldRefuse, a.Refused+a.WouldRefuse), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Rule, b.Rule))
	})
	byDay := map[string]*BlockDay{}
	for d := from; !d.After(today); d = d.AddDate(0, 0, 1) {
		out.Daily = append(out.Daily, BlockDay{Day: d.Format(time.DateOnly)})
	}
	for i := range out.Daily {
		byDay[out.Daily[i].Day] = &out.Daily[i]
	}
	for _, d := range dayRows {
		bd, ok := byDay[d.Day]
		if !ok {
			continue
		}
		if d.Verdict == "wouldRefuse" {
			bd.WouldRefuse += d.N
		} else {
			bd.Refused += d.N
		}
	}
	return out, nil
}
